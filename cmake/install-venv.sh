#!/usr/bin/env bash
# Creates the project's Python venv (.venv, or $VPROF_VENV) with the PyPI packages whose
# standard tools live there: perfetto (its trace schema, perfetto_trace_pb2, which reads the
# Perfetto export back in the tests), protobuf >= 6.31 (what that schema needs; Debian's
# is older), pyarrow and duckdb (Parquet and the SQL engine of the fleet analysis), and
# vprof's own python/ package vprof_fleet (editable: the tree's SQL is the one that runs;
# docs/fleet.md). Idempotent: nothing is installed when the packages are present.
#
#   bash cmake/install-venv.sh           the above
#   bash cmake/install-venv.sh --spark   and pyspark (Spark's jars, ~480 MB; the fleet SQL on
#                                        a Spark cluster, tests/fleet/test_spark.py; its Java
#                                        runtime comes from cmake/install-deps.sh)
# pyspark is optional because of its size: exporting and analysing Parquet needs only
# pyarrow and duckdb, and a site with a Spark cluster has its own Spark. ./test.sh asks for it.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
venv="${VPROF_VENV:-$here/.venv}"
spark=0
case "${1:-}" in
  "") ;;
  --spark) spark=1 ;;
  *) echo "install-venv.sh: unknown option '$1' (try: --spark)" >&2; exit 2 ;;
esac
check='import google.protobuf as g, perfetto.protos.perfetto.trace.perfetto_trace_pb2 as p
import pathlib, pyarrow, duckdb, vprof_fleet
v = tuple(int(x) for x in g.__version__.split(".")[:2]); assert v >= (6, 31), v
assert tuple(int(x) for x in pyarrow.__version__.split(".")[:1]) >= (14,), pyarrow.__version__
assert pathlib.Path(vprof_fleet.__file__).resolve().parent == pathlib.Path("'"$here"'/python/vprof_fleet").resolve()'
# Spark 4 (Java 17 and Scala 2.13 jars), the version the fleet test and benchmark ran on
check_spark='import pyspark; assert int(pyspark.__version__.split(".")[0]) >= 4, pyspark.__version__'
have() { [ -x "$venv/bin/python" ] && "$venv/bin/python" -c "$1" 2>/dev/null; }
if have "$check" && { [ $spark = 0 ] || have "$check_spark"; }; then
  exit 0
fi
if ! have "$check"; then
  echo "vprof: setting up the Python venv $venv (perfetto, protobuf, pyarrow, duckdb from PyPI; python/vprof_fleet)"
  /usr/bin/python3 -m venv "$venv"
  "$venv/bin/python" -m pip install -q --disable-pip-version-check "perfetto>=0.59" "protobuf>=6.31" \
    "pyarrow>=14" "duckdb>=1.0"
  "$venv/bin/python" -m pip install -q --disable-pip-version-check -e "$here/python"
  "$venv/bin/python" -c "$check"
fi
if [ $spark = 1 ] && ! have "$check_spark"; then
  echo "vprof: installing pyspark into $venv (Spark's jars, ~480 MB, from PyPI)"
  "$venv/bin/python" -m pip install -q --disable-pip-version-check "pyspark>=4.0,<5"
  "$venv/bin/python" -c "$check_spark"
fi
