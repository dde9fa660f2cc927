#!/usr/bin/env bash
# Fleet benchmark: N hosts x M intervals of a synthetic 16-node tree (fleet_bench.cpp), the
# variance decomposition (Var(L), every node's variance and contribution, the places, per
# interval type) as the portable SQL on DuckDB over Parquet (python/vprof_fleet), the same
# SQL on a Spark standalone cluster of local processes (a master, 2 workers of one core each;
# spark_bench.py) and by vprof's analyzer over the same numbers in memory; wall time and peak
# RSS of each (Spark: of every JVM, executors apart), and Var(L) of every side checked equal
# within 1e-9 relative. benchmarks/results/fleet.md.
# Usage: benchmarks/fleet/run.sh [N=100] [M=10000] [build-dir=build] [scratch=/tmp/vprof-fleet-bench]
# Environment: DUCKDB_MEMORY (DuckDB's memory_limit, default 8GB); SPARK_EXECUTOR_MEMORY
# (each executor's JVM heap, default 2g), SPARK_SHUFFLE_PARTITIONS (default Spark's 200);
# SPARK=0 leaves Spark out.
# Needs the project venv (bash cmake/install-venv.sh; --spark for Spark, and Java 17 from
# cmake/install-deps.sh) and the target vprof_fleet_bench.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
N=${1:-100}
M=${2:-10000}
build=${3:-$root/build}
scratch=${4:-/tmp/vprof-fleet-bench}
py="${VPROF_VENV:-$root/.venv}/bin/python"
bench=$build/benchmarks/fleet/vprof_fleet_bench
rm -rf "${scratch:?}" && mkdir -p "$scratch/pq"
echo "fleet: $N hosts x $M intervals; rows per host -> Parquet (fleet_bench rows + vprof_fleet convert)"
t0=$(date +%s.%N)
for h in $(seq 1 "$N"); do
  "$bench" rows "$scratch/rows" "$h" "$M"
  "$py" -m vprof_fleet convert "$scratch/rows" "$scratch/pq/host-$h" --host "host-$h" --run r1 2>/dev/null
done
rm -rf "${scratch:?}/rows"
echo "fleet: Parquet written in $(echo "$(date +%s.%N) - $t0" | bc) s, $(du -sh "$scratch/pq" | cut -f1)"
measure() { # label, command...: the command's JSON line, then wall s and max RSS of the process
  local label=$1
  shift
  /usr/bin/time -f "$label wall %e s, max RSS %M kB" -o "$scratch/time.txt" "$@" >"$scratch/$label.json"
  cat "$scratch/$label.json" "$scratch/time.txt"
}
# DuckDB may use up to $DUCKDB_MEMORY (default 8GB) and spills to the scratch folder beyond
duck=("$py" "$here/duck_bench.py" --memory-limit "${DUCKDB_MEMORY:-8GB}" --temp-directory "$scratch/spill")
measure duckdb-1thread "${duck[@]}" --threads 1 "$scratch/pq"
measure duckdb-2threads "${duck[@]}" --threads 2 "$scratch/pq"
if [ "${SPARK:-1}" != 0 ] && "$py" -c "import pyspark" 2>/dev/null; then
  # the cluster's own processes are measured by spark_bench.py (/usr/bin/time sees its python)
  measure spark "$py" "$here/spark_bench.py" --executor-memory "${SPARK_EXECUTOR_MEMORY:-2g}" \
    ${SPARK_SHUFFLE_PARTITIONS:+--shuffle-partitions "$SPARK_SHUFFLE_PARTITIONS"} "$scratch/pq"
else
  echo "spark: left out (SPARK=0, or no pyspark in the venv: bash cmake/install-venv.sh --spark)"
fi
measure analyzer "$bench" analyze "$N" "$M"
measure analyzer-full "$bench" analyze "$N" "$M" --full
"$py" - "$scratch/analyzer.json" "$scratch/duckdb-2threads.json" "$scratch/spark.json" <<'PY'
import json, os, sys
ana = json.load(open(sys.argv[1]))
for engine, path in (("DuckDB", sys.argv[2]), ("Spark", sys.argv[3])):
    if not os.path.exists(path):
        continue
    d = {g["label"]: g for g in json.load(open(path))["groups"]}
    for g in ana["groups"]:
        a, b = g["var_ns2"], d[g["label"]]["var_ns2"]
        assert g["intervals"] == d[g["label"]]["intervals"], (engine, g)
        assert abs(a - b) <= 1e-9 * abs(a), (engine, g["label"], a, b)
        print(f"Var(L) [{g['label'] or 'all'}]: analyzer {a:.10g}, {engine} {b:.10g}, "
              f"relative difference {abs(a - b) / abs(a):.1e}")
PY
rm -rf "${scratch:?}"
