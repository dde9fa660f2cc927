#!/usr/bin/env bash
# Analyzer benchmark: two synthetic traces with the same intervals x nodes (4000 intervals
# on 4 threads, 8 nodes) and 50 M vs 100 M records; for each prints records/s per core
# (CPU time) of validation, of the critical-path pass and end to end, and peak RSS.
# Usage: benchmarks/analyzer/run.sh [build-dir=build] [scratch=/tmp/vprof-analyzer-bench]
set -euo pipefail
build=${1:-build}
scratch=${2:-/tmp/vprof-analyzer-bench}
bench=$build/benchmarks/analyzer/vprof_analyzer_bench
for n in 50000000 100000000; do
  "$bench" gen "$scratch/$n" "$n"
  "$bench" run "$scratch/$n" >/dev/null   # warm the page cache
  for rep in 1 2 3; do "$bench" run "$scratch/$n"; done
  rm -rf "${scratch:?}/$n"
done
