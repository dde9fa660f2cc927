#!/usr/bin/env bash
# Installs every build and test dependency of vprof from Debian's packages, idempotently:
# packages already present are not touched, and apt is not called at all when nothing is missing.
set -euo pipefail

PKGS=(
  # toolchain
  g++ cmake ninja-build ccache make
  clang-19 libclang-19-dev llvm-19-dev clang-format-19
  # libraries
  libboost-graph-dev libeigen3-dev libsqlite3-dev sqlite3
  libtomlplusplus-dev libcli11-dev libfmt-dev nlohmann-json3-dev
  # tests and benchmarks
  libgtest-dev libgmock-dev libbenchmark-dev python3 python3-pytest
  libclang-rt-19-dev  # libFuzzer + sanitizers for analyzer/fuzz/run.sh
  # the HTML report's test: headless Chromium driven by selenium
  chromium chromium-driver python3-selenium
  # the kernel wake-up recorder (recorder/): libbpf with CO-RE, bpftool for vmlinux.h and
  # the skeleton; BPF objects are compiled by clang-19 -target bpf
  libbpf-dev bpftool
  # the fleet analysis on a Spark standalone cluster (tests/fleet/test_spark.py,
  # benchmarks/fleet): Spark 4 runs on Java 17; pyspark itself is in the venv
  # (cmake/install-venv.sh --spark)
  openjdk-17-jre-headless
)

missing=()
for p in "${PKGS[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "vprof: all ${#PKGS[@]} dependencies present"
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
echo "vprof: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "vprof: dependencies installed"
