#!/usr/bin/env bash
# The whole vprof loop on memcached 1.6.18 (Debian source) as a new user would run it:
# fetch, build plainly under bear, configure a second tree for vprof, `vprof init` +
# `vprof loop` with vprof.toml from this folder (default roots), print the answer.
#   run.sh [hol|stats|dump] (default hol; workload.sh says what each provokes)
# Everything lands in $VPROF_REAL_CACHE/memcached (default build/real/memcached); the
# project folder with .vprof/ is .../project-<scenario>.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../../.." && pwd)"
what="${1:-hol}"
cache="${VPROF_REAL_CACHE:-$repo/build/real}/memcached"
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
