#!/usr/bin/env bash
# Fetches LevelDB's Debian source package (bookworm 1.23-4; Debian's patches applied: they
# take GoogleTest from the system), applies the vprof annotation (annotate.patch) into
# $VPROF_REAL_CACHE/leveldb/src (default build/real/leveldb/src). Idempotent.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../../.." && pwd)"
cache="${VPROF_REAL_CACHE:-$repo/build/real}/leveldb"
version="${VPROF_LEVELDB_VERSION:-1.23-4}"
src="$cache/src"
if [ -f "$src/.vprof-patched" ]; then
  exit 0
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
if ! dpkg-query -W -f='${Status}' dpkg-dev 2>/dev/null | grep -q "install ok installed"; then
  $SUDO apt-get install -y -qq --no-install-recommends dpkg-dev >/dev/null
fi
bash "$here/../deb-src.sh"
mkdir -p "$cache/dl"
dsc="$cache/dl/leveldb_${version}.dsc"
if [ ! -f "$dsc" ]; then
  echo "vprof: apt-get source leveldb=$version"
  (cd "$cache/dl" && apt-get source --download-only -qq "leveldb=$version" 2>&1 |
    grep -v "unsandboxed" || true)
  [ -f "$dsc" ] || { echo "vprof: $dsc: apt-get source failed (deb-src enabled?)" >&2; exit 1; }
fi
rm -rf "$src"
dpkg-source -x "$dsc" "$src" >/dev/null
patch -s -d "$src" -p1 < "$here/annotate.patch"
touch "$src/.vprof-patched"
echo "vprof: LevelDB $version in $src, annotated"
