#!/usr/bin/env bash
# Installs the Debian packages (idempotent), configures and builds kanscale
# into build/. Safe to run again: it only rebuilds what changed. Prints the
# time each phase took. KANSCALE_TU_TIMES=FILE appends each translation
# unit's compile time to FILE (scripts/tu-time.sh as the compiler launcher;
# tab-separated seconds and object, heaviest first with `sort -rn FILE`).
set -euo pipefail
cd "$(dirname "$0")/.."
phase() { printf 'build.sh: %-10s %6.1f s\n' "$1" "$(awk -v a="$2" -v b="$(date +%s.%N)" 'BEGIN { print b - a }')"; }
t=$(date +%s.%N)
bash scripts/install-deps.sh
phase packages "$t"
launcher=()
if [ -n "${KANSCALE_TU_TIMES:-}" ]; then
  export KANSCALE_TU_TIMES
  KANSCALE_TU_TIMES=$(realpath -m "$KANSCALE_TU_TIMES")
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER="$PWD/scripts/tu-time.sh" -DCMAKE_CUDA_COMPILER_LAUNCHER="$PWD/scripts/tu-time.sh")
fi
t=$(date +%s.%N)
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release "${launcher[@]}" >/dev/null
phase configure "$t"
t=$(date +%s.%N)
cmake --build build -j"$(nproc)"
phase build "$t"
