#!/usr/bin/env bash
# Configures and builds memcached out of tree (autotools, as its users do; -O2 -g as Debian
# builds it; no SASL, no TLS: the defaults), under bear:
#   build.sh plain   $VPROF_REAL_CACHE/memcached/plain, the A/B baseline
#   build.sh vprof   .../vprof, the tree `vprof loop` then rebuilds through its compiler
#                    wrappers with `make CC="$CC"` (vprof makes the objects whose plan changed
#                    older than their sources); its compile_commands.json is what `vprof init` reads
# The one include path a plain build needs: <repo>/annotations/include. Idempotent.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../../.." && pwd)"
cache="${VPROF_REAL_CACHE:-$repo/build/real}/memcached"
kind="${1:?usage: build.sh plain|vprof}"
bash "$here/fetch.sh"
dir="$cache/$kind"
mkdir -p "$dir"
if [ ! -f "$dir/config.status" ]; then
  echo "vprof: configuring memcached ($kind) in $dir"
  (cd "$dir" && "$cache/src/configure" --disable-docs --disable-coverage \
    CFLAGS="-O2 -g" CPPFLAGS="-I$repo/annotations/include" >"$dir/configure.log" 2>&1) ||
    { tail -20 "$dir/configure.log"; exit 1; }
fi
# Built when missing; the plain tree again when the annotated source changed (fetch.sh's
# stamp). The vprof tree is rebuilt by `vprof loop` only once it has a workspace.
stale=0
[ "$kind" = plain ] && ! cmp -s "$cache/src/.vprof-patched" "$dir/.vprof-built" && stale=1
if [ ! -x "$dir/memcached" ] || [ "$stale" = 1 ]; then
  echo "vprof: building memcached ($kind) under bear"
  (cd "$dir" && env -u VPROF_WORKSPACE bear --output "$dir/compile_commands.json" -- \
    make -s -j"$(nproc)" memcached >"$dir/build.log" 2>&1) || { tail -30 "$dir/build.log"; exit 1; }
  cp "$cache/src/.vprof-patched" "$dir/.vprof-built"
fi
echo "vprof: memcached ($kind) in $dir"
