#!/usr/bin/env bash
# The scan's corpus run (issue 40): `vprof init` over MariaDB's whole compile database, in a
# scratch project under $VPROF_REAL_CACHE/mariadb/init, timed. Exit 0 with a workspace is
# the pass; a unit the scan skipped is listed in its .vprof/skipped-units.txt.
#   benchmarks/real/mariadb/init.sh            # the whole tree (1,080 units, ~13 min on 2 cores)
#   benchmarks/real/mariadb/init.sh mariadbd   # the server's units alone
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../../.." && pwd)"
cache="${VPROF_REAL_CACHE:-$repo/build/real}/mariadb"
vprof="${VPROF:-${VPROF_BUILD_DIR:-$repo/build}/driver/vprof}"
[ -x "$vprof" ] || { echo "vprof: $vprof not built (bash cmake/build.sh)" >&2; exit 1; }
bash "$here/build.sh" compdb
db="$cache/vprof/compile_commands.json"
[ "${1:-}" = "mariadbd" ] && db="$cache/vprof/compdb-mariadbd/compile_commands.json"
project="$cache/init"
rm -rf "$project"
mkdir -p "$project"
start=$(date +%s)
status=0
"$vprof" -C "$project" init --compile-commands "$db" --root do_command || status=$?
echo "vprof: init over $db: exit $status in $(( $(date +%s) - start )) s"
if [ -f "$project/.vprof/skipped-units.txt" ]; then
  echo "vprof: skipped units:"; cat "$project/.vprof/skipped-units.txt"
fi
exit "$status"
