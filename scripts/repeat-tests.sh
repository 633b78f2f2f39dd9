#!/usr/bin/env bash
# Runs the README's test command N times in a row on the current build and
# prints one line per run (result, seconds, CPU model), then a summary; the
# logs go to LOG_DIR. A suite that fails by chance blocks every landing: this
# is how its stability is shown (issue 10: ten consecutive green runs).
# usage: scripts/repeat-tests.sh [N=10] [LOG_DIR=build/repeat-tests]
set -uo pipefail
cd "$(dirname "$0")/.."
n="${1:-10}"
logs="${2:-build/repeat-tests}"
mkdir -p -- "$logs"
cpu="$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
echo "repeat-tests: $n runs of 'ctest --test-dir build --output-on-failure' on $cpu ($(nproc) cores)"
green=0
for i in $(seq 1 "$n"); do
  start=$(date +%s)
  if ctest --test-dir build --output-on-failure >"$logs/run-$i.log" 2>&1; then
    result=passed
    green=$((green + 1))
  else
    result=FAILED
  fi
  summary="$(grep -E 'tests passed|tests failed' "$logs/run-$i.log" | tail -1)"
  echo "run $i: $result in $(( $(date +%s) - start )) s ($summary; load average $(cut -d' ' -f1 /proc/loadavg))"
done
echo "$green of $n runs green"
[ "$green" -eq "$n" ]
