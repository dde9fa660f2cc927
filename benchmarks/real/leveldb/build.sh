#!/usr/bin/env bash
# Configures and builds LevelDB with CMake + Ninja as its users do (C++11, its default), out
# of tree: `build.sh plain` into $VPROF_REAL_CACHE/leveldb/plain (the A/B baseline),
# `build.sh vprof` into .../vprof with vprof's compiler wrappers as the compilers (a CMake
# build fixes its compiler at configure time; without a workspace the wrappers compile
# plainly, so this first build is a plain one). `vprof loop` then runs `cmake --build`
# unchanged: vprof makes the objects whose plan changed older than their sources.
# The one include path a plain build needs: <repo>/annotations/include. Idempotent.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../../.." && pwd)"
cache="${VPROF_REAL_CACHE:-$repo/build/real}/leveldb"
kind="${1:?usage: build.sh plain|vprof}"
tools="${VPROF_BUILD_DIR:-$repo/build}/instrumenter"
bash "$here/fetch.sh"
dir="$cache/$kind"
if [ ! -f "$dir/build.ninja" ]; then
  compilers=()
  if [ "$kind" = vprof ]; then
    compilers=(-DCMAKE_C_COMPILER="$tools/vprof-cc" -DCMAKE_CXX_COMPILER="$tools/vprof-c++")
  fi
  echo "vprof: configuring LevelDB ($kind) in $dir"
  cmake -S "$cache/src" -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DLEVELDB_BUILD_TESTS=OFF -DCMAKE_EXPORT_COMPILE_COMMANDS=ON \
    -DCMAKE_CXX_FLAGS="-I$repo/annotations/include" "${compilers[@]}" >"$dir.configure.log" 2>&1 ||
    { tail -20 "$dir.configure.log"; exit 1; }
fi
echo "vprof: building LevelDB ($kind)"
env -u VPROF_WORKSPACE cmake --build "$dir" --target db_bench >"$dir.build.log" 2>&1 ||
  { tail -20 "$dir.build.log"; exit 1; }
