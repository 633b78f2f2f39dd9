#!/bin/bash
# Issue 59, "same ranks, unseen shapes" at one rank: calibrations from
# torch.profiler traces of a PyTorch DDP job (kanscale train --profile, as a
# user's own: schedule(wait=1, warmup=2, active=3)) judged on the 24 cases of
# validation/plans/pytorch-trace-cases.yaml, whose shapes no trace ran.
#   many: 4 traced shapes (every class fitted: calls x fixed + elements x per_element)
#   one:  the first traced shape alone (per_element borrowed from the shipped calibration)
#   shipped: configs/calibrations/pytorch-cpu.yaml (microbenchmarks on another machine), for scale
# Writes OUT/traces, OUT/cal-many, OUT/cal-one, OUT/cases (the runs) and
# OUT/judged-{many,one,shipped} (report.md, results.json each).
# RANKS 2: traces and cases at 2 ranks (validation/plans/pytorch-trace-cases-2.yaml).
# PYTHON (an interpreter with another torch, scripts/torch-venv.sh): traces
# and cases run on it, and the default interpreter's traces (Debian's torch
# 1.13) give OUT/cal-default too, judged on the same cases as
# OUT/judged-default: a calibration of the wrong torch.
# usage: scripts/trace-calibration-check.sh KANSCALE OUT [RANKS] [PYTHON]
set -euo pipefail
exe=$1 out=$2 ranks=${3:-1} python=${4:-}
py=()
[ -z "$python" ] || py=(--python "$python")
plan=validation/plans/pytorch-trace-cases.yaml
[ "$ranks" = 1 ] || plan=validation/plans/pytorch-trace-cases-$ranks.yaml
mkdir -p "$out/traces"
# the traced shapes: those of configs/calibrate/pytorch-cpu.yaml's live runs, and the tests' small one
shapes=("[24, 64, 1]|7|4" "[40, 144, 144, 2]|7|48" "[48, 176, 3]|7|256" "[8, 16, 1]|5|16")
args=() dargs=()
for i in "${!shapes[@]}"; do
  IFS='|' read -r widths grid batch <<< "${shapes[$i]}"
  w="$out/traces/w$i.yaml"
  printf 'name: traced-%s\nkan: {widths: %s, grid_size: %s, spline_order: 3}\nbatch_per_gpu: %s\ndataset_size: 4096\nseed: 5\nimplementation: pytorch\nddp: {bucket_cap: "1MiB"}\n' \
    "$i" "$widths" "$grid" "$batch" > "$w"
  "$exe" train "${py[@]}" --workload "$w" --ranks "$ranks" --steps 10 --profile "$out/traces/t$i.json" > "$out/traces/train$i.log" 2>&1
  args+=(--from-trace "$out/traces/t$i.json" --workload "$w")
  if [ -n "$python" ]; then
    "$exe" train --workload "$w" --ranks "$ranks" --steps 10 --profile "$out/traces/d$i.json" > "$out/traces/default$i.log" 2>&1
    dargs+=(--from-trace "$out/traces/d$i.json" --workload "$w")
  fi
done
"$exe" calibrate "${args[@]}" --ranks "$ranks" --out "$out/cal-many" > "$out/cal-many.log"
"$exe" calibrate "${args[@]:0:4}" --ranks "$ranks" --out "$out/cal-one" > "$out/cal-one.log"
kinds=(many one shipped)
if [ -n "$python" ]; then
  "$exe" calibrate "${dargs[@]}" --ranks "$ranks" --out "$out/cal-default" > "$out/cal-default.log"
  kinds+=(default)
fi
"$exe" validate "${py[@]}" "$plan" --out "$out/cases" > "$out/cases.log" 2>&1 || true  # judged below
for kind in "${kinds[@]}"; do
  cal="$out/cal-$kind/results/calibration-pytorch.yaml"
  [ "$kind" = shipped ] && cal=configs/calibrations/pytorch-cpu.yaml
  "$exe" validate "$plan" --collect "$out/cases/work" --calibration "$cal" --out "$out/judged-$kind" > /dev/null 2>&1 || true
  grep -m1 "^| iteration time" "$out/judged-$kind/report.md" | sed "s/^/$kind /"
done
