#!/usr/bin/env bash
# Runs every vprof test from a fresh machine: installs dependencies, builds, then runs
# the C++ unit tests (CTest) and the end-to-end tests (pytest).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
export VPROF_BUILD_DIR="${VPROF_BUILD_DIR:-$here/build}"
bash "$here/cmake/build.sh"
bash "$here/cmake/install-venv.sh" --spark
echo "vprof: C++ unit tests (ctest)"
ctest --test-dir "$VPROF_BUILD_DIR" --output-on-failure -j2
echo "vprof: end-to-end tests (pytest)"
cd "$here"
/usr/bin/python3 -m pytest -q tests "$@"
