#!/usr/bin/env bash
# Configures MariaDB's server (mariadbd, InnoDB) out of tree with CMake in $VPROF_REAL_CACHE/mariadb/vprof:
# `build.sh compdb` writes compile_commands.json and builds only the generated headers/sources its
# translation units include; `build.sh server` builds mariadbd itself. Idempotent.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../../.." && pwd)"
cache="${VPROF_REAL_CACHE:-$repo/build/real}/mariadb"
kind="${1:?usage: build.sh compdb|server}"
case "$kind" in compdb|server) ;; *) echo "vprof: usage: build.sh compdb|server" >&2; exit 1 ;; esac
jobs="${VPROF_REAL_JOBS:-$(nproc)}"

# The build dependencies of this configuration (the server, InnoDB on io_uring, system SSL/PCRE2/
# zlib/fmt: the bundled PCRE2 and fmt would be downloaded at build time).
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
need=()
for p in cmake ninja-build bison gcc g++ libssl-dev zlib1g-dev libpcre2-dev libfmt-dev \
  libncurses-dev liburing-dev; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || need+=("$p")
done
if [ ${#need[@]} -gt 0 ]; then
  echo "vprof: installing ${need[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi

bash "$here/fetch.sh"
src="$cache/src"
dir="$cache/vprof"
mkdir -p "$dir"
# Off: the storage engines and plugins a mariadbd with InnoDB does not need (the heavy ones
# bring their own libraries), Galera, mariabackup, the unit tests. Kept: the mandatory engines
# (Aria, MyISAM, MRG_MyISAM, HEAP, CSV, sequence tables), the performance schema and
# partitioning, as Debian builds them; and HandlerSocket (its C++ templates once crashed the
# scan: plugin/handler_socket/handlersocket/hstcpsvr_worker.cpp, issue 40).
off=(ROCKSDB MROONGA SPIDER CONNECT COLUMNSTORE S3 OQGRAPH SPHINX FEDERATED FEDERATEDX ARCHIVE
  BLACKHOLE EXAMPLE TEST_SQL_DISCOVERY AUTH_GSSAPI AUTH_GSSAPI_CLIENT AUTH_PAM AUTH_PAM_V1
  AWS_KEY_MANAGEMENT HASHICORP_KEY_MANAGEMENT CRACKLIB_PASSWORD_CHECK
  PROVIDER_BZIP2 PROVIDER_LZ4 PROVIDER_LZMA PROVIDER_LZO PROVIDER_SNAPPY)
options=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_EXPORT_COMPILE_COMMANDS=ON
  -DPLUGIN_INNOBASE=STATIC -DWITH_URING=ON -DWITH_WSREP=OFF -DWITH_MARIABACKUP=OFF
  -DWITH_UNIT_TESTS=OFF -DWITH_EMBEDDED_SERVER=OFF -DUPDATE_SUBMODULES=OFF
  -DWITH_SSL=system -DWITH_PCRE=system -DWITH_ZLIB=system -DWITH_LIBFMT=system
  -DWITH_SYSTEMD=no -DWITH_NUMA=OFF -DWITH_JEMALLOC=no)
for p in "${off[@]}"; do options+=("-DPLUGIN_$p=NO"); done
generator=()
if command -v ninja >/dev/null; then generator=(-G Ninja); fi
# Reconfigured when the options (or the fetched version) change.
config_id="$( (printf '%s\n' "${options[@]}" "${generator[@]}"; cat "$src/.vprof-fetched") | sha256sum | cut -c1-16)"
if [ ! -f "$dir/compile_commands.json" ] || [ "$(cat "$dir/.vprof-configured" 2>/dev/null)" != "$config_id" ]; then
  echo "vprof: configuring MariaDB in $dir"
  rm -rf "$dir"; mkdir -p "$dir"
  (cd "$dir" && cmake "${generator[@]}" "${options[@]}" "$src" >"$dir/configure.log" 2>&1) ||
    { tail -30 "$dir/configure.log"; exit 1; }
  echo "$config_id" >"$dir/.vprof-configured"
fi
build() { # build TARGET...: with the generator's tool, output in build.log
  if [ -f "$dir/build.ninja" ]; then ninja -C "$dir" -j"$jobs" "$@"; else make -C "$dir" -j"$jobs" "$@"; fi \
    >>"$dir/build.log" 2>&1 || { tail -30 "$dir/build.log"; exit 1; }
}
case "$kind" in
  compdb)
    if [ "$(cat "$dir/.vprof-generated" 2>/dev/null)" != "$config_id" ]; then
      echo "vprof: generating MariaDB's headers and sources (GenError, GenServerSource, ...)"
      if [ -f "$dir/build.ninja" ]; then
        # What every object waits for, and nothing else: CMake's Ninja generator gives each target a
        # phony cmake_object_order_depends_target_T, the order-only input of T's objects, which
        # stands for the custom commands (bison, gen_lex_hash, comp_err, ...) and the targets
        # added as dependencies that T's compiles need first.
        mapfile -t order < <(ninja -C "$dir" -t targets all | sed -n 's/^\(cmake_object_order_depends_target_[^:]*\): phony$/\1/p')
        build "${order[@]}"
      else
        build GenError GenServerSource GenUnicodeDataSource GenFixPrivs
      fi
      echo "$config_id" >"$dir/.vprof-generated"
    fi
    n="$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))))' "$dir/compile_commands.json")"
    echo "vprof: MariaDB compile database in $dir/compile_commands.json ($n commands)"
    # mariadbd's own translation units alone (the tree's also holds the client library, the
    # clients, the tools and the dynamic plugins): the compiles `ninja mariadbd` would run.
    if [ -f "$dir/build.ninja" ]; then
      mkdir -p "$dir/compdb-mariadbd"
      ninja -C "$dir" -t commands mariadbd | python3 -c '
import json, shlex, sys
def output(cmd):
    a = shlex.split(cmd)
    return a[a.index("-o") + 1] if "-o" in a else None
outs = {output(l) for l in sys.stdin if " -c " in l}
db = [e for e in json.load(open(sys.argv[1])) if output(e["command"]) in outs]
json.dump(db, open(sys.argv[2], "w"), indent=1)
print(f"vprof: mariadbd alone in {sys.argv[2]} ({len(db)} commands)")
' "$dir/compile_commands.json" "$dir/compdb-mariadbd/compile_commands.json"
    fi ;;
  server)
    [ -x "$dir/sql/mariadbd" ] || echo "vprof: building mariadbd; long on 2 cores"
    build mariadbd
    echo "vprof: mariadbd in $dir/sql/mariadbd" ;;
esac
