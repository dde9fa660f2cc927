#!/usr/bin/env bash
# The whole vprof loop on PostgreSQL 15, as a new user would run it: fetch the Debian
# source, build it plainly (compile database from bear), configure a second tree for vprof,
# `vprof init` + `vprof loop` with vprof.toml from this folder, print the answer.
#   run.sh [TRANSACTIONS_PER_CLIENT]   (default 2000; 4 clients)
# VPROF_PG_LATCH_MARKS=0 run.sh: the variant without the hand-written latch marks
# (latch-marks.patch left out): the latch's wake-up edges come from the kernel's wake-ups,
# so the loop runs with kernel_wakeups = "on" (root or CAP_BPF + CAP_PERFMON; an error
# otherwise, not a silent answer without edges).
# Everything lands in $VPROF_REAL_CACHE/postgres (default build/real/postgres): the
# project folder with .vprof/ (workspace, traces, reports) is .../project.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../../.." && pwd)"
cache="${VPROF_REAL_CACHE:-$repo/build/real}/postgres"
export VPROF_BUILD_DIR="${VPROF_BUILD_DIR:-$repo/build}"
bash "$repo/cmake/build.sh" >/dev/null
vprof="$VPROF_BUILD_DIR/driver/vprof"
bash "$here/build.sh" plain
bash "$here/build.sh" vprof
project="$cache/project"
rm -rf "$project"
mkdir -p "$project"
sed -e "s#@CACHE@#$cache#g" -e "s#@HERE@#$here#g" -e "s#@TXNS@#${1:-2000}#g" \
  "$here/vprof.toml.in" >"$project/vprof.toml"
if [ "${VPROF_PG_LATCH_MARKS:-1}" = 0 ]; then
  printf '%s\n' '# the variant without latch marks: its latch edges are the kernel wake-ups' \
    'kernel_wakeups = "on"' >>"$project/vprof.toml"
fi
# A backend serves 2,000 transactions: at the exploration budget (~4,000 records each) its
# stream passes half of the runtime's default 256 MiB cap. The planner keeps every plan
# within the cap it reads from this environment, and workload.sh passes it to the server.
export VPROF_MAX_THREAD_MB="${VPROF_MAX_THREAD_MB:-1024}"
"$vprof" -C "$project" init
"$vprof" -C "$project" loop
