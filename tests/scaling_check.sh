#!/usr/bin/env bash
# ctest scaling_check (issue 56): scripts/scaling-check.sh end to end at
# --max-ranks 2 on this machine: the archive holds the plan it ran (1 and 2
# ranks judged, 4, 8 and 16 oversubscribed), the report's "Error per rank
# count" table, and results.json's per_ranks, whose rows agree with the
# report's cases (3 shapes a rank count).
# Usage: tests/scaling_check.sh SOURCE_DIR KANSCALE
set -euo pipefail
src=$1 exe=$2
work=$(mktemp -d /tmp/kanscale-scaling-test.XXXXXX)
trap 'rm -rf "$work"' EXIT
bash "$src/scripts/scaling-check.sh" --max-ranks 2 --out "$work/out" --kanscale "$exe" >"$work/log.txt" 2>&1 || { cat "$work/log.txt"; exit 1; }
mkdir "$work/x"
tar -xzf "$work/out/scaling-check.tar.gz" -C "$work/x"
grep -q "^  ranks: \[1, 2\]$" "$work/x/scaling-kanscale.yaml"
grep -q "^  oversubscribed_ranks: \[4, 8, 16\]$" "$work/x/scaling-kanscale.yaml"
grep -q "^## Error per rank count" "$work/x/report/report.md"
# the per-rank table against the cases the report lists: 3 shapes a rank count,
# 1 and 2 judged, 4, 8 and 16 oversubscribed
report=$work/x/report/report.md
for n in 1 2; do
  grep -qE "^\| $n \| 3 \| [0-9.]+% \| [-+][0-9.]+% \| [0-9]+ of [0-9]+ \| - \|$" "$report" || { echo "no judged row for $n ranks"; exit 1; }
  [ "$(grep -cE "^\| np$n \[.*\] G5 b32 cap 256.00 KiB( shm)? \|" "$report")" -eq 3 ] || { echo "not 3 judged cases at $n ranks"; exit 1; }
done
for n in 4 8 16; do
  grep -qE "^\| $n \| 0 \| - \| - \| - \| 3 \([0-9.]+%\) \|$" "$report" || { echo "no oversubscribed row for $n ranks"; exit 1; }
  [ "$(grep -cE "^\| np$n \[.*\(oversubscribed\) \|" "$report")" -eq 3 ] || { echo "not 3 oversubscribed cases at $n ranks"; exit 1; }
done
grep -q '"per_ranks"' "$work/x/report/results.json"
echo "scaling_check: the archive holds the plan, the report's per-rank table (2 judged counts, 3 oversubscribed) and per_ranks"
