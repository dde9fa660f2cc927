#!/usr/bin/env bash
# Configures and builds vprof into ./build (or $VPROF_BUILD_DIR) after installing the
# dependencies; shared by ./demo.sh and ./test.sh. Incremental and ccache-backed.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
build="${VPROF_BUILD_DIR:-$here/build}"
bash "$here/cmake/install-deps.sh"
if [ ! -f "$build/CMakeCache.txt" ]; then
  cmake -S "$here" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
fi
echo "vprof: building in $build"
cmake --build "$build" -j"$(nproc)"
