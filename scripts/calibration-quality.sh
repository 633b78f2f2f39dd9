#!/bin/bash
# Old against new calibrate on one machine (issue 60): N old and N new
# calibrations of PLAN, interleaved (old, new, old, new...), each timed with
# /usr/bin/time -f %e on a fresh --out; then the 27 hidden-shape cases of
# validation/plans/pytorch-cpu-cases.yaml run once and judged with each
# calibration (validate --collect --calibration). Figures to compare: each
# fit-report's held-out errors and model error, and each report.md's mean
# |error| and coverage.
# usage: scripts/calibration-quality.sh OLD_KANSCALE NEW_KANSCALE OUT [PLAN] [N]
set -euo pipefail
old=$1 new=$2 out=$3 plan=${4:-configs/calibrate/pytorch-cpu.yaml} n=${5:-3}
mkdir -p "$out"
for i in $(seq 1 "$n"); do
  for kind in old new; do
    exe=$old; [ "$kind" = new ] && exe=$new
    /usr/bin/time -f "$kind$i %e" -a -o "$out/times.txt" "$exe" calibrate "$plan" --out "$out/$kind$i" > "$out/$kind$i.log" 2>&1
  done
done
"$new" validate validation/plans/pytorch-cpu-cases.yaml --out "$out/cases" > "$out/cases.log" 2>&1 || true  # (its bound is not the point)
for i in $(seq 1 "$n"); do
  for kind in old new; do
    "$new" validate validation/plans/pytorch-cpu-cases.yaml --collect "$out/cases/work" \
      --calibration "$out/$kind$i/results/calibration-gloo.yaml" --out "$out/judged-$kind$i" > /dev/null 2>&1 || true
    grep -m1 "^| iteration time" "$out/judged-$kind$i/report.md" | sed "s/^/$kind$i /"
  done
done
cat "$out/times.txt"
