#!/usr/bin/env bash
# The main job: from a fresh machine, installs what vprof needs, builds it, and profiles the
# bundled mini database (benchmarks/minidb) end to end with `vprof loop`, printing where
# the variance of its transaction latency comes from.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
export VPROF_BUILD_DIR="${VPROF_BUILD_DIR:-$here/build}"
bash "$here/cmake/build.sh"
vprof="$VPROF_BUILD_DIR/driver/vprof"

cd "$here/benchmarks/minidb"
rm -rf .vprof                       # a fresh workspace: every demo starts from plan 0
echo "vprof: compile database of the mini database"
make -s OUT=.vprof/build compdb
"$vprof" init                       # settings: benchmarks/minidb/vprof.toml
"$vprof" loop
echo
echo "vprof: workspace benchmarks/minidb/.vprof (query it with sqlite3 .vprof/vprof.db);"
echo "vprof: reports per iteration in benchmarks/minidb/.vprof/reports/"
html="$(ls -v .vprof/reports/iter-*.html | tail -n 1)"
echo "vprof: the HTML report with the variance flame graph: benchmarks/minidb/$html"
