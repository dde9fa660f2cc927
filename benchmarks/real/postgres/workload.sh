#!/usr/bin/env bash
# The PostgreSQL workload: a TPC-B-like transaction sent as ONE simple-protocol query
# (tpcb-one-query.sql: the statements joined with \;), so one interval of
# exec_simple_query is one transaction. Starts the server of the given install (as an
# unprivileged user when run as root: PostgreSQL refuses root), runs pgbench, stops it.
#   workload.sh INSTALL_DIR [TRANSACTIONS_PER_CLIENT]
# Environment: PG_CLIENTS (4), PG_SCALE (10), PG_PORT (55432), PG_CLIENT_BIN (the bin/ of
# pgbench and psql, default the install's: the load generator of a profiled server should be
# a plain build, run.sh and ab.py point it at plain/install/bin), PG_DURATION (seconds: run
# pgbench that long instead of a number of transactions, printing its progress every second
# with Unix timestamps — ab.py --kernel-wakeups-alternate). VPROF_TRACE_DIR, when set
# (by `vprof loop`), is made writable for the server's user: a server that cannot write it
# would run untraced.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
install="$(cd "${1:?usage: workload.sh INSTALL_DIR [TRANSACTIONS_PER_CLIENT]}" && pwd)"
per_client="${2:-2000}"
clients="${PG_CLIENTS:-4}"
scale="${PG_SCALE:-10}"
port="${PG_PORT:-55432}"
data="$install/../data"
user="$(id -un)"
as_user=()
if [ "$(id -u)" -eq 0 ]; then
  user=vprofpg
  id "$user" >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin "$user"
  as_user=(runuser -u "$user" --)
fi
if [ -n "${VPROF_TRACE_DIR:-}" ]; then
  mkdir -p "$VPROF_TRACE_DIR"
  chmod 1777 "$VPROF_TRACE_DIR"
fi
bin="$install/bin"
client="${PG_CLIENT_BIN:-$bin}"
if [ ! -f "$data/PG_VERSION" ]; then
  echo "workload: initdb $data (scale $scale)"
  mkdir -p "$data"
  chown "$user" "$data"
  "${as_user[@]}" "$bin/initdb" -D "$data" -A trust --no-sync -U postgres >/dev/null
  cat >>"$data/postgresql.conf" <<CONF
listen_addresses = ''
unix_socket_directories = '$data'
port = $port
max_connections = 20
shared_buffers = 128MB
synchronous_commit = on
fsync = on
CONF
  fresh=1
fi
pgctl() {
  "${as_user[@]}" env ${VPROF_TRACE_DIR:+VPROF_TRACE_DIR=$VPROF_TRACE_DIR} \
    ${VPROF_MAX_THREAD_MB:+VPROF_MAX_THREAD_MB=$VPROF_MAX_THREAD_MB} "$bin/pg_ctl" -D "$data" "$@"
}
stop() { pgctl -m fast -w stop >/dev/null 2>&1 || true; }
trap stop EXIT
if [ -n "${fresh:-}" ]; then
  # the tables are loaded by a server that is not traced: loading is not the workload
  VPROF_DISABLE=1 pgctl -l "$data/server.log" -w start >/dev/null
  "${as_user[@]}" env VPROF_DISABLE=1 "$client/pgbench" -h "$data" -p "$port" -U postgres -i -q -s "$scale" postgres >/dev/null 2>&1
  "${as_user[@]}" env VPROF_DISABLE=1 "$client/psql" -h "$data" -p "$port" -U postgres -qc "CHECKPOINT" postgres
  stop
fi
pgctl -l "$data/server.log" -w start >/dev/null
# the script file must be readable by the server's user
cp "$here/tpcb-one-query.sql" "$data/../tpcb-one-query.sql"
chmod 644 "$data/../tpcb-one-query.sql"
# pgbench is the load, not the profiled program: VPROF_DISABLE=1 also keeps the kernel
# wake-up recorder off its threads (docs/recorder.md), which would cost every one of its
# switches and give the analyzer nothing.
length=(-t "$per_client")
if [ -n "${PG_DURATION:-}" ]; then
  length=(-T "$PG_DURATION" -P 1 --progress-timestamp)
fi
"${as_user[@]}" env -u VPROF_TRACE_DIR VPROF_DISABLE=1 "$client/pgbench" -h "$data" -p "$port" -U postgres -n -M simple \
  -c "$clients" -j 2 "${length[@]}" -f "$data/../tpcb-one-query.sql" postgres 2>&1 |
  grep -E "^(tps|latency|number of (transactions|failed)|progress:)" || true
