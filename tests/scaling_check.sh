#!/usr/bin/env bash
# ctest scaling_check (issue 56): scripts/scaling-check.sh end to end at
# --max-ranks 2 on this machine, both parts (kanscale's trainer over MPI;
# PyTorch DDP over gloo, its oversubscribed counts cut at 4 to keep CI short):
# the archive holds each plan it ran (1 and 2 ranks judged, the rest
# oversubscribed), each report's "Error per rank count" table, and each
# results.json's per_ranks, whose rows agree with the report's cases (3
# shapes a rank count).
# Usage: tests/scaling_check.sh SOURCE_DIR KANSCALE
set -euo pipefail
src=$1 exe=$2
work=$(mktemp -d /tmp/kanscale-scaling-test.XXXXXX)
trap 'rm -rf "$work"' EXIT
# part, plan name, the oversubscribed counts the run keeps
check_part() {
  local part=$1 name=$2 over_max=$3
  shift 3
  local over=("$@")
  bash "$src/scripts/scaling-check.sh" --parts "$part" --max-ranks 2 --oversubscribed-max "$over_max" --out "$work/$part" \
    --kanscale "$exe" >"$work/$part.log" 2>&1 || { cat "$work/$part.log"; exit 1; }
  mkdir "$work/x-$part"
  tar -xzf "$work/$part/scaling-check.tar.gz" -C "$work/x-$part"
  local plan=$work/x-$part/$name.yaml report=$work/x-$part/report-$part/report.md
  grep -q "^  ranks: \[1, 2\]$" "$plan"
  local want
  want=$(printf '%s, ' "${over[@]}")
  want="[${want%, }]"
  grep -qF "  oversubscribed_ranks: $want" "$plan" || { echo "$part: oversubscribed_ranks not $want"; exit 1; }
  grep -q "^## Error per rank count" "$report"
  # the per-rank table against the cases the report lists: 3 shapes a rank count
  for n in 1 2; do
    grep -qE "^\| $n \| 3 \| [0-9.]+% \| [-+][0-9.]+% \| [0-9]+ of [0-9]+ \| - \|$" "$report" || { echo "$part: no judged row for $n ranks"; exit 1; }
    [ "$(grep -E "^\| np$n \[" "$report" | grep -vc "(oversubscribed)")" -eq 3 ] || { echo "$part: not 3 judged cases at $n ranks"; exit 1; }
  done
  for n in "${over[@]}"; do
    grep -qE "^\| $n \| 0 \| - \| - \| - \| 3 \([0-9.]+%\) \|$" "$report" || { echo "$part: no oversubscribed row for $n ranks"; exit 1; }
    [ "$(grep -cE "^\| np$n \[.*\(oversubscribed\) \|" "$report")" -eq 3 ] || { echo "$part: not 3 oversubscribed cases at $n ranks"; exit 1; }
  done
  grep -q '"per_ranks"' "$work/x-$part/report-$part/results.json"
  echo "scaling_check: $part: the archive holds the plan, the report's per-rank table (2 judged counts, ${#over[@]} oversubscribed) and per_ranks"
}
check_part mpi scaling-kanscale 16 4 8 16
check_part pytorch scaling-pytorch 4 4
