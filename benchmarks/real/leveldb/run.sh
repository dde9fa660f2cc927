#!/usr/bin/env bash
# The whole vprof loop on LevelDB 1.23 (Debian source) as a new user would run it: fetch,
# build plainly (CMake + Ninja, C++11), `vprof init` + `vprof loop`, print the answer.
#   run.sh [fillsync|fillrandom|stall]      (default fillsync)
# Everything lands in $VPROF_REAL_CACHE/leveldb (default build/real/leveldb); the project
# folder with .vprof/ is .../project-<workload>.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../../.." && pwd)"
what="${1:-fillsync}"
cache="${VPROF_REAL_CACHE:-$repo/build/real}/leveldb"
export VPROF_BUILD_DIR="${VPROF_BUILD_DIR:-$repo/build}"
bash "$repo/cmake/build.sh" >/dev/null
vprof="$VPROF_BUILD_DIR/driver/vprof"
bash "$here/build.sh" plain
bash "$here/build.sh" vprof
project="$cache/project-$what"
rm -rf "$project"
mkdir -p "$project"
sed -e "s#@CACHE@#$cache#g" -e "s#@HERE@#$here#g" -e "s#@WHAT@#$what#g" \
  "$here/vprof.toml.in" >"$project/vprof.toml"
"$vprof" -C "$project" init
"$vprof" -C "$project" loop
