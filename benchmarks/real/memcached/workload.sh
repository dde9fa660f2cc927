#!/usr/bin/env bash
# The memcached workload: the server (run as root with `-u root`: memcached refuses root
# otherwise, and the trace directory must stay writable), memcaslap (libmemcached-tools)
# driving 50 connections with its default 9:1 get/set mix, the latency probe and, when the
# cause is on, the client that provokes it (mcclient.py). Stops the server with SIGTERM
# (memcached exits through main, so the runtime closes its streams).
#   workload.sh MEMCACHED hol|stats|dump [on|off] [SECONDS]
# hol:   one worker thread (-t 1); the cause: a client sending a 2000-key multi-get (2 MiB
#        reply) every 10 ms — every other connection's commands wait behind it on the loop
# stats: four worker threads (-t 4); the cause: a monitoring agent polling `stats slabs` and
#        `stats items` every millisecond (slabs lock and LRU locks, taken by every store)
# dump:  four worker threads (-t 4, memcached's default) and a cache smaller than the working
#        set (-m 32: every store evicts, taking its class's COLD LRU lock); the cause: a
#        monitoring agent dumping the busiest class's keys (`stats cachedump`) every 10 ms,
#        under that lock
# off:   the same without the provoking client (the truth A/B)
# Prints memcaslap's summary (TPS), the probe's percentiles, the cause client's line and the
# server's CPU time per command (its own `stats`).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
bin="${1:?usage: workload.sh MEMCACHED hol|stats|dump [on|off] [SECONDS]}"
what="${2:-hol}"
cause="${3:-on}"
secs="${4:-6}"
port="${MC_PORT:-22122}"
case "$what" in
  hol) threads=1 ;;
  stats) threads=4 ;;
  dump) threads=4; memory=32 ;;
  *) echo "workload.sh: unknown scenario $what (hol|stats|dump)" >&2; exit 2 ;;
esac
"$bin" -u root -l 127.0.0.1 -p "$port" -U 0 -t "$threads" -m "${memory:-256}" -c 1024 &
server=$!
stop() { kill -TERM "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; }
trap stop EXIT
pids=()
python3 "$here/mcclient.py" "$port" probe "$secs" &
pids+=($!)
if [ "$cause" = on ]; then
  case "$what" in hol) client=slow ;; *) client="$what" ;; esac
  python3 "$here/mcclient.py" "$port" "$client" "$secs" &
  pids+=($!)
fi
memcaslap -s "127.0.0.1:$port" -T 1 -c 50 -t "${secs}s" 2>&1 | grep -E "^Run time" || true
for p in "${pids[@]}"; do wait "$p"; done
python3 "$here/mcclient.py" "$port" usage 0
