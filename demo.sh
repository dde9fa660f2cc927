#!/usr/bin/env bash
# The main job: from a fresh machine, installs what vprof needs, builds it, and profiles the
# bundled mini database (benchmarks/minidb) end to end with `vprof loop`, printing where
# the variance of its transaction latency comes from.
#
#   ./demo.sh        the main demo (above)
#   ./demo.sh vats   the second demo: what VProfiler found in MySQL, on the mini database:
#                    lock granting FCFS against oldest-transaction-first (VATS), 7 runs
#                    each, a table and a plot of latency variance and p99, and a vprof
#                    loop per policy showing the lock wait's share of Var(L) before and
#                    after (benchmarks/minidb/repro_lock_policy.py, about 2 minutes)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
case "${1:-}" in
  "" | vats) ;;
  -h | --help) sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  *) echo "demo.sh: unknown demo '$1' (try: ./demo.sh, ./demo.sh vats)" >&2; exit 2 ;;
esac
export VPROF_BUILD_DIR="${VPROF_BUILD_DIR:-$here/build}"
bash "$here/cmake/build.sh"
vprof="$VPROF_BUILD_DIR/driver/vprof"

if [ "${1:-}" = vats ]; then
  out="$here/benchmarks/minidb/.vprof-vats"
  echo "vprof: FCFS against VATS lock granting on the mini database's hot mix"
  /usr/bin/python3 "$here/benchmarks/minidb/repro_lock_policy.py" \
    --minidb "$VPROF_BUILD_DIR/benchmarks/minidb/minidb" --vprof "$vprof" --out-dir "$out"
  echo "vprof: table and profiles in benchmarks/minidb/.vprof-vats/lock_policy.md, plot beside it"
  exit 0
fi

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
