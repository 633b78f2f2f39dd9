#!/bin/bash
# Old against new calibrate on one machine (issue 60): N old and N new
# calibrations of PLAN, interleaved (old, new, old, new...), each timed with
# /usr/bin/time -f %e on a fresh --out; then the hidden-shape cases of CASES
# (default validation/plans/pytorch-cpu-cases.yaml, 27 cases) run once and
# judged with each calibration (validate --collect --calibration CAL, CAL
# inside each calibration's --out: results/calibration-gloo.yaml, or
# results for one per transport). Figures to compare: each fit-report's
# held-out errors and model error, and each report.md's mean |error| and
# coverage.
# usage: scripts/calibration-quality.sh OLD_KANSCALE NEW_KANSCALE OUT [PLAN] [N] [CASES] [CAL]
#   e.g. ... configs/calibrate/local-cpu.yaml 3 validation/plans/local-cpu-cases.yaml results
set -euo pipefail
old=$1 new=$2 out=$3 plan=${4:-configs/calibrate/pytorch-cpu.yaml} n=${5:-3}
cases=${6:-validation/plans/pytorch-cpu-cases.yaml} cal=${7:-results/calibration-gloo.yaml}
old_plan=${OLD_PLAN:-$plan}  # the old kanscale's own copy where the plan's keys changed
mkdir -p "$out"
for i in $(seq 1 "$n"); do
  for kind in old new; do
    exe=$old p=$old_plan; [ "$kind" = new ] && exe=$new p=$plan
    /usr/bin/time -f "$kind$i %e" -a -o "$out/times.txt" "$exe" calibrate "$p" --out "$out/$kind$i" > "$out/$kind$i.log" 2>&1
  done
done
[ -d "$out/cases/work" ] ||  # (run before, in the same sitting)
  "$new" validate "$cases" --out "$out/cases" > "$out/cases.log" 2>&1 || true  # (its bound is not the point)
for i in $(seq 1 "$n"); do
  for kind in old new; do
    "$new" validate "$cases" --collect "$out/cases/work" \
      --calibration "$out/$kind$i/$cal" --out "$out/judged-$kind$i" > /dev/null 2>&1 || true
    grep -m1 "^| iteration time" "$out/judged-$kind$i/report.md" | sed "s/^/$kind$i /"
  done
done
cat "$out/times.txt"
