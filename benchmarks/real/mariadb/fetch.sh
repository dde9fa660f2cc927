#!/usr/bin/env bash
# Fetches MariaDB 10.11's Debian 12 source package and extracts the upstream tree into
# $VPROF_REAL_CACHE/mariadb/src (default build/real/mariadb/src). Idempotent (a stamp file).
# The version is pinned in bookworm main: the security pool's newer one may be gone from the mirror.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../../.." && pwd)"
cache="${VPROF_REAL_CACHE:-$repo/build/real}/mariadb"
version="${VPROF_MARIADB_VERSION:-1:10.11.18-0+deb12u1}"
upstream="${version#*:}"
upstream="${upstream%%-*}"
src="$cache/src"

if [ -f "$src/.vprof-fetched" ] && [ "$(cat "$src/.vprof-fetched")" = "$version" ]; then
  exit 0
fi
bash "$here/../deb-src.sh"
mkdir -p "$cache/dl"
tarball="$cache/dl/mariadb_${upstream}.orig.tar.gz"
if [ ! -f "$tarball" ]; then
  echo "vprof: apt-get source mariadb=$version (115 MB)"
  (cd "$cache/dl" && apt-get source --download-only -qq "mariadb=$version" 2>&1 |
    grep -v "unsandboxed" || true)
  [ -f "$tarball" ] || { echo "vprof: $tarball: apt-get source failed (deb-src enabled? version gone from the mirror? see apt-cache showsrc mariadb)" >&2; exit 1; }
fi
rm -rf "$src" "$cache/mariadb-$upstream"
tar xzf "$tarball" -C "$cache"
mv "$cache/mariadb-$upstream" "$src"
echo "$version" >"$src/.vprof-fetched"
echo "vprof: MariaDB $upstream in $src"
