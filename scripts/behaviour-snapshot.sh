#!/bin/bash
# Outputs that a restructuring must not change (issue 11): every shipped
# calibration refitted from its own measurement files, simulate on the
# shipped clusters and workloads (table, JSON, CSV, buckets, trace),
# validate --published, and validate --collect on a saved work directory of
# validation/plans/ci-small.yaml (kanscale validate validation/plans/ci-small.yaml
# --out SAVED leaves it in SAVED/work).
# Usage: scripts/behaviour-snapshot.sh KANSCALE OUTDIR SAVED/work
# Compare two snapshots with diff -r, ignoring the provenance lines.
set -euo pipefail
exe=$(realpath "$1")
out=$(realpath -m "$2")
saved=$(realpath "$3")
cd "$(dirname "$0")/.."
mkdir -p "$out"
# 1. refit: the fit command recorded in each calibration's second line
for cal in configs/calibrations/*.yaml; do
  line=$(sed -n 2p "$cal")
  case "$line" in "# kanscale fit "*) ;; *) continue ;; esac
  read -r -a argv <<<"${line#\# kanscale fit }"
  for i in "${!argv[@]}"; do
    if [ "${argv[$i]}" = --out ]; then argv[$((i + 1))]="$out/refit-$(basename "$cal")"; fi
  done
  "$exe" fit "${argv[@]}" >"$out/refit-$(basename "$cal" .yaml).txt"
done
# 2. simulate
n=0
for c in configs/clusters/*.yaml; do
  gpus=1,2,4,8,64
  case "$c" in *local-cpu*) gpus=1,2 ;; *single-h200*) gpus=1 ;; esac
  for w in configs/workloads/*.yaml; do
    n=$((n + 1))
    tag="sim-$(basename "$c" .yaml)-$(basename "$w" .yaml)"
    if "$exe" simulate --cluster "$c" --workload "$w" --gpus "$gpus" --json "$out/$tag.json" --csv "$out/$tag.csv" \
      --trace "$out/$tag.trace.json" >"$out/$tag.txt" 2>"$out/$tag.err"; then :; else echo "exit $?" >>"$out/$tag.err"; fi
  done
done
for w in configs/workloads/*.yaml; do
  tag="sim-calibrated-$(basename "$w" .yaml)"
  "$exe" simulate --cluster configs/clusters/local-cpu.yaml --workload "$w" --calibration configs/calibrations/local-cpu.yaml \
    --gpus 1,2 --json "$out/$tag.json" --csv "$out/$tag.csv" >"$out/$tag.txt" 2>&1 || echo "exit $?" >>"$out/$tag.txt"
done
# 3. validation against published results and on saved live runs
"$exe" validate validation/plans/finisterrae3.yaml --published --out "$out/published" >"$out/published.txt" 2>&1 || true
# collect refits the rounds' calibration inside the saved directory: work on a copy
rm -rf "$out/saved-work" && cp -r "$saved" "$out/saved-work"
"$exe" validate validation/plans/ci-small.yaml --collect "$out/saved-work" --out "$out/collect" >"$out/collect.txt" 2>&1 || true
echo "snapshot of $n cluster x workload pairs, refits, published and collect in $out"
