#!/usr/bin/env bash
# The recorder's cost on socket sends (its sock_send_length program, format version 3): runs
# send_cost.c alternately without the recorder and with it recording another process (an idle
# `sleep`), RUNS times each, and prints each run's ns per send + receive. Needs root.
#   sudo bash benchmarks/recorder/send_cost.sh [BUILD_DIR] [RUNS]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-$here/../../build}
runs=${2:-5}
recorder=$build/recorder/vprof-sched
[ -x "$recorder" ] || { echo "send_cost: $recorder not built" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cc -O2 -o "$tmp/send_cost" "$here/send_cost.c"
for ((i = 1; i <= runs; i++)); do
  echo "off $("$tmp/send_cost")"
  sleep 60 &
  idle=$!
  "$recorder" --root-pid "$idle" --out "$tmp/sched.vpk" --quiet &
  rec=$!
  sleep 1
  echo "on  $("$tmp/send_cost")"
  kill "$idle"
  wait "$rec" || true
done
