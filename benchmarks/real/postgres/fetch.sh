#!/usr/bin/env bash
# Fetches PostgreSQL 15's Debian source package, extracts the upstream tree and applies the
# vprof annotation into $VPROF_REAL_CACHE/postgres/src (default build/real/postgres/src):
# annotate.patch (the interval of a query) and, unless VPROF_PG_LATCH_MARKS=0, latch-marks.patch
# (the latch as a hand-marked blocking primitive; without it the latch's wake-up edges come
# from the kernel's wake-ups, vprof-sched). Installs the few Debian packages the build needs.
# Idempotent.
# The version is pinned in bookworm main: the security pool's newer one may be gone from
# the mirror.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../../.." && pwd)"
cache="${VPROF_REAL_CACHE:-$repo/build/real}/postgres"
version="${VPROF_PG_VERSION:-15.18-0+deb12u1}"
upstream="${version%%-*}"
src="$cache/src"
# The patch set: the interval marks always, the latch marks unless VPROF_PG_LATCH_MARKS=0.
patches=("$here/annotate.patch")
case "${VPROF_PG_LATCH_MARKS:-1}" in
  1) patches+=("$here/latch-marks.patch") ;;
  0) ;;
  *) echo "vprof: VPROF_PG_LATCH_MARKS must be 0 or 1, not '${VPROF_PG_LATCH_MARKS}'" >&2; exit 1 ;;
esac

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

# The stamp holds the patch set's hash: a changed patch or patch set re-extracts the tree
# (the builds then recompile what changed: tar keeps the release's mtimes).
patch_id="$(cat "${patches[@]}" | sha256sum | cut -c1-16)"
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
for p in "${patches[@]}"; do
  patch -s -d "$src" -p1 <"$p"
done
echo "$patch_id" >"$src/.vprof-patched"
echo "vprof: PostgreSQL $upstream in $src, annotated ($(basename -a "${patches[@]}" | tr '\n' ' '| sed 's/ $//'))"
