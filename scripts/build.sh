#!/usr/bin/env bash
# Installs the Debian packages (idempotent), configures and builds kanscale
# into build/. Safe to run again: it only rebuilds what changed.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$(nproc)"
