#!/usr/bin/env bash
# Enables Debian source packages (deb-src) for the suites this machine already uses, so
# that `apt-get source` works; idempotent. Shared by the real-system benchmarks.
set -euo pipefail
list=/etc/apt/sources.list.d/vprof-deb-src.sources
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
if [ ! -f "$list" ] && ! grep -rqs "^Types:.*deb-src\|^deb-src " /etc/apt/sources.list /etc/apt/sources.list.d/; then
  echo "vprof: enabling deb-src entries ($list)"
  $SUDO tee "$list" >/dev/null <<'SRC'
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb-src
URIs: http://deb.debian.org/debian-security
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
  $SUDO apt-get update -qq
fi
