#!/usr/bin/env bash
# LevelDB's db_bench as the workload: one interval per DB::Write (annotate.patch), 4 writer
# threads on a fresh database.
#   workload.sh DB_BENCH fillsync|fillrandom|stall [NUM]
# fillsync: every write synced (the group commit's fdatasync); fillrandom: asynchronous
# writes; stall: fillrandom with a 64 KiB write buffer, so level-0 compactions throttle
# writers (MakeRoomForWrite). NUM: writes per thread (defaults keep a run to seconds).
set -euo pipefail
bench="${1:?usage: workload.sh DB_BENCH fillsync|fillrandom|stall [NUM]}"
what="${2:-fillsync}"
db="$(mktemp -d "${TMPDIR:-/tmp}/vprof-leveldb.XXXXXX")"
trap 'rm -rf "$db"' EXIT
case "$what" in
  fillsync) args=(--benchmarks=fillsync --num="${3:-300000}") ;;  # fillsync writes num/1000
  fillrandom) args=(--benchmarks=fillrandom --num="${3:-50000}") ;;
  stall) args=(--benchmarks=fillrandom --num="${3:-50000}" --write_buffer_size=65536) ;;
  *) echo "workload.sh: unknown workload $what" >&2; exit 2 ;;
esac
"$bench" --threads=4 --db="$db" "${args[@]}" 2>&1 | grep -E "micros/op|^fill" || true
