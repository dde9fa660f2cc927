#!/usr/bin/env bash
# Creates the project's Python venv (.venv, or $VPROF_VENV) with the PyPI packages whose
# standard tools live there: perfetto (its trace schema, perfetto_trace_pb2, which reads the
# Perfetto export back in the tests), protobuf >= 6.31 (what that schema needs; Debian's
# is older), pyarrow and duckdb (Parquet and the SQL engine of the fleet analysis), and
# vprof's own python/ package vprof_fleet (editable: the tree's SQL is the one that runs;
# docs/fleet.md). Idempotent: nothing is installed when the packages are present.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
venv="${VPROF_VENV:-$here/.venv}"
check='import google.protobuf as g, perfetto.protos.perfetto.trace.perfetto_trace_pb2 as p
import pathlib, pyarrow, duckdb, vprof_fleet
v = tuple(int(x) for x in g.__version__.split(".")[:2]); assert v >= (6, 31), v
assert tuple(int(x) for x in pyarrow.__version__.split(".")[:1]) >= (14,), pyarrow.__version__
assert pathlib.Path(vprof_fleet.__file__).resolve().parent == pathlib.Path("'"$here"'/python/vprof_fleet").resolve()'
if [ -x "$venv/bin/python" ] && "$venv/bin/python" -c "$check" 2>/dev/null; then
  exit 0
fi
echo "vprof: setting up the Python venv $venv (perfetto, protobuf, pyarrow, duckdb from PyPI; python/vprof_fleet)"
/usr/bin/python3 -m venv "$venv"
"$venv/bin/python" -m pip install -q --disable-pip-version-check "perfetto>=0.59" "protobuf>=6.31" \
  "pyarrow>=14" "duckdb>=1.0"
"$venv/bin/python" -m pip install -q --disable-pip-version-check -e "$here/python"
"$venv/bin/python" -c "$check"
