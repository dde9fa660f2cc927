#!/usr/bin/env bash
# Fetches PostgreSQL 15's Debian source package, extracts the upstream tree and applies the
# vprof annotation (annotate.patch) into $VPROF_REAL_CACHE/postgres/src (default
# build/real/postgres/src); installs the few Debian packages the build needs. Idempotent.
# The version is pinned in bookworm main: the security pool's newer one may be gone from
# the mirror.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../../.." && pwd)"
cache="${VPROF_REAL_CACHE:-$repo/build/real}/postgres"
version="${VPROF_PG_VERSION:-15.18-0+deb12u1}"
upstream="${version%%-*}"
src="$cache/src"

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
need=()
for p in bear bison flex make gcc; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || need+=("$p")
done
if [ ${#need[@]} -gt 0 ]; then
  echo "vprof: installing ${need[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi

# The stamp holds the patch's hash: a changed annotate.patch re-extracts the tree (the
# builds then recompile what changed: tar keeps the release's mtimes).
patch_id="$(sha256sum "$here/annotate.patch" | cut -c1-16)"
if [ -f "$src/.vprof-patched" ] && [ "$(cat "$src/.vprof-patched")" = "$patch_id" ]; then
  exit 0
fi
bash "$here/../deb-src.sh"
mkdir -p "$cache/dl"
tarball="$cache/dl/postgresql-15_${upstream}.orig.tar.bz2"
if [ ! -f "$tarball" ]; then
  echo "vprof: apt-get source postgresql-15=$version"
  (cd "$cache/dl" && apt-get source --download-only -qq "postgresql-15=$version" 2>&1 |
    grep -v "unsandboxed" || true)
  [ -f "$tarball" ] || { echo "vprof: $tarball: apt-get source failed (deb-src enabled?)" >&2; exit 1; }
fi
rm -rf "$src" "$cache/postgresql-$upstream"
tar xjf "$tarball" -C "$cache"
mv "$cache/postgresql-$upstream" "$src"
patch -s -d "$src" -p1 < "$here/annotate.patch"
echo "$patch_id" >"$src/.vprof-patched"
echo "vprof: PostgreSQL $upstream in $src, annotated"
