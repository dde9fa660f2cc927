#!/usr/bin/env bash
# Creates the project's Python venv (.venv, or $VPROF_VENV) with the PyPI packages whose
# standard tools live there: perfetto (its trace schema, perfetto_trace_pb2, which reads the
# Perfetto export back in the tests) and protobuf >= 6.31 (what that schema needs; Debian's
# is older). Idempotent: nothing is installed when the packages are present.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
venv="${VPROF_VENV:-$here/.venv}"
check='import google.protobuf as g, perfetto.protos.perfetto.trace.perfetto_trace_pb2 as p
v = tuple(int(x) for x in g.__version__.split(".")[:2]); assert v >= (6, 31), v'
if [ -x "$venv/bin/python" ] && "$venv/bin/python" -c "$check" 2>/dev/null; then
  exit 0
fi
echo "vprof: setting up the Python venv $venv (perfetto, protobuf from PyPI)"
/usr/bin/python3 -m venv "$venv"
"$venv/bin/python" -m pip install -q --disable-pip-version-check "perfetto>=0.59" "protobuf>=6.31"
"$venv/bin/python" -c "$check"
