#!/usr/bin/env bash
# Fetches the SQLite amalgamation (sqlite3.c, sqlite3.h) from crates.io's libsqlite3-sys
# (feature "bundled") with `cargo vendor`, into benchmarks/third_party/sqlite/ (gitignored).
# Idempotent: does nothing when the files are already there.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
tp="$here/../third_party"
out="$tp/sqlite"
if [ -f "$out/sqlite3.c" ] && [ -f "$out/sqlite3.h" ]; then
  echo "sqlite: cached in $out"
  exit 0
fi
command -v cargo >/dev/null || { echo "fetch.sh: cargo not found (needed to vendor libsqlite3-sys)" >&2; exit 1; }
proj="$tp/sqlite-vendor"
mkdir -p "$proj/src"
cat >"$proj/Cargo.toml" <<'TOML'
[package]
name = "vprof-sqlite-fetch"
version = "0.0.0"
edition = "2021"
publish = false

[dependencies]
libsqlite3-sys = { version = "0.30", features = ["bundled"] }
TOML
echo 'fn main() {}' >"$proj/src/main.rs"
(cd "$proj" && cargo vendor --quiet vendor >/dev/null)
src="$(ls -d "$proj"/vendor/libsqlite3-sys*/sqlite3 | head -1)"
mkdir -p "$out"
cp "$src/sqlite3.c" "$src/sqlite3.h" "$out/"
echo "sqlite: $(grep -m1 '#define SQLITE_VERSION ' "$out/sqlite3.h") in $out"
