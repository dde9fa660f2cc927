#!/usr/bin/env bash
# Configures and builds PostgreSQL out of tree, as a user would before profiling:
# `build.sh plain` into $VPROF_REAL_CACHE/postgres/plain (the A/B baseline), `build.sh vprof`
# into .../vprof, the tree `vprof loop` then rebuilds through its compiler wrappers with
# `make CC="$CC"` (vprof makes exactly the objects whose plan changed older than their
# sources). Both are built under bear; the vprof tree's compile_commands.json is what
# `vprof init` reads. The annotation header comes from the repository's annotations/include
# (the one include path a plain build needs). Idempotent.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../../.." && pwd)"
cache="${VPROF_REAL_CACHE:-$repo/build/real}/postgres"
kind="${1:?usage: build.sh plain|vprof}"
bash "$here/fetch.sh"
dir="$cache/$kind"
mkdir -p "$dir"
if [ ! -f "$dir/config.status" ]; then
  echo "vprof: configuring PostgreSQL ($kind) in $dir"
  # Minimal features: the server and pgbench; -O2 -g as Debian builds it.
  (cd "$dir" && "$cache/src/configure" --prefix="$dir/install" --without-readline \
    --without-icu --without-zlib --without-lz4 --without-zstd \
    CFLAGS="-O2 -g" CPPFLAGS="-I$repo/annotations/include" >"$dir/configure.log" 2>&1) ||
    { tail -20 "$dir/configure.log"; exit 1; }
fi
# Built when missing; the plain tree again when the annotated source changed (the stamp of
# fetch.sh). The vprof tree is rebuilt by `vprof loop` only: its objects hold probes and link
# with the runtime through the wrappers.
stale=0
[ "$kind" = plain ] && ! cmp -s "$cache/src/.vprof-patched" "$dir/.vprof-built" && stale=1
if [ ! -x "$dir/install/bin/postgres" ] || [ "$stale" = 1 ]; then
  echo "vprof: building PostgreSQL ($kind) under bear; a few minutes on 2 cores"
  (cd "$dir" && bear --append --output "$dir/compile_commands.json" -- make -s -j"$(nproc)" >"$dir/build.log" 2>&1 &&
    make -s install >>"$dir/build.log" 2>&1) ||
    { tail -30 "$dir/build.log"; exit 1; }
  cp "$cache/src/.vprof-patched" "$dir/.vprof-built"
fi
echo "vprof: PostgreSQL ($kind) in $dir"
