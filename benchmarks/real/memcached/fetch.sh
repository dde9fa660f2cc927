#!/usr/bin/env bash
# Fetches memcached 1.6.18's Debian source package (bookworm main, pinned: the security
# pool's 1.6.18-1+deb12u1 may be gone from the mirror), extracts it with Debian's patches
# and applies the vprof annotation (annotate.patch) into $VPROF_REAL_CACHE/memcached/src
# (default build/real/memcached/src); installs the Debian packages the build and the client
# need (bear, libevent-dev, libmemcached-tools for memcaslap). Idempotent.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../../.." && pwd)"
cache="${VPROF_REAL_CACHE:-$repo/build/real}/memcached"
version="${VPROF_MEMCACHED_VERSION:-1.6.18-1}"
src="$cache/src"

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
need=()
for p in bear dpkg-dev gcc make libevent-dev libmemcached-tools; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || need+=("$p")
done
if [ ${#need[@]} -gt 0 ]; then
  echo "vprof: installing ${need[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi

# The stamp holds the patch's hash: a changed annotate.patch re-extracts the tree.
patch_id="$(sha256sum "$here/annotate.patch" | cut -c1-16)"
if [ -f "$src/.vprof-patched" ] && [ "$(cat "$src/.vprof-patched")" = "$patch_id" ]; then
  exit 0
fi
bash "$here/../deb-src.sh"
mkdir -p "$cache/dl"
dsc="$cache/dl/memcached_${version}.dsc"
if [ ! -f "$dsc" ]; then
  echo "vprof: apt-get source memcached=$version"
  (cd "$cache/dl" && apt-get source --download-only -qq "memcached=$version" 2>&1 |
    grep -v "unsandboxed" || true)
  [ -f "$dsc" ] || { echo "vprof: $dsc: apt-get source failed (deb-src enabled?)" >&2; exit 1; }
fi
rm -rf "$src"
dpkg-source -x "$dsc" "$src" >/dev/null
patch -s -d "$src" -p1 < "$here/annotate.patch"
echo "$patch_id" >"$src/.vprof-patched"
echo "vprof: memcached $version in $src, annotated"
