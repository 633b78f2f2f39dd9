#!/bin/bash
# Outputs that a restructuring must not change (issue 11): every shipped
# calibration refitted from its own measurement files, simulate on the
# shipped clusters and workloads (table, JSON, CSV, buckets, trace),
# validate --published, and validate --collect on a saved work directory of
# validation/plans/ci-small.yaml (kanscale validate validation/plans/ci-small.yaml
# --out SAVED leaves it in SAVED/work); every shipped study, the five what-if
# queries (table and JSON), model allreduce/layer, and eval of a checkpoint that
# a one-rank, one-thread train writes (deterministic for its seed).
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
# 4. studies (their outputs, provenance aside, and the printed summary)
for s in configs/studies/*.yaml; do
  tag="study-$(basename "$s" .yaml)"
  "$exe" study "$s" --out "$out/$tag" >"$out/$tag.txt" 2>&1 || echo "exit $?" >>"$out/$tag.txt"
done
# 5. what-if: each query, as a table and as JSON
C=configs/clusters W=configs/workloads/default.yaml
wi() {
  local tag=$1; shift
  "$exe" whatif "$@" --json "$out/whatif-$tag.json" >"$out/whatif-$tag.txt" 2>&1 || echo "exit $?" >>"$out/whatif-$tag.txt"
}
wi gpus gpus --cluster $C/dgx-a100.yaml --workload $W --epochs 10 --budget 2min --min-efficiency 0.7
wi gpus-local gpus --cluster $C/local-cpu.yaml --calibration configs/calibrations/local-cpu.yaml \
  --workload configs/workloads/local-kanscale.yaml --budget 3s
wi model model --cluster $C/dgx-a100.yaml --workload $W --vary widths --gpus 8
wi grid model --cluster $C/pcie-a100.yaml --workload $W --vary grid --gpus 4
wi bucket-cap bucket-cap --cluster $C/dgx-a100.yaml --workload $W --gpus 64
wi cluster cluster --cluster $C/dgx-a100.yaml --cluster $C/pcie-a100.yaml --workload $W --budget 1s
wi change change --cluster $C/dgx-a100.yaml --workload $W --gpus 64 --set network.latency=2x --set batch_per_gpu=0.5x
wi change-nccl change --cluster $C/dgx-a100.yaml --workload $W --gpus 16 --set nccl_algo=tree --set grid_size=8
wi change-none change --cluster $C/dgx-a100.yaml --workload $W --gpus 8 --set network.latency=2x
# 6. model: point queries
for c in $C/*.yaml; do
  tag="model-$(basename "$c" .yaml)"
  { "$exe" model allreduce --cluster "$c" --bytes 4MiB --gpus 2 &&
    "$exe" model allreduce --cluster "$c" --bytes 100MiB --gpus 16 --gpus-per-node 8 &&
    "$exe" model layer --cluster "$c" --implementation efficient-kan --batch 256 --in 64 --out 128 --grid 7; } \
    >"$out/$tag.txt" 2>&1 || echo "exit $?" >>"$out/$tag.txt"
done
"$exe" model layer --cluster $C/local-cpu.yaml --calibration configs/calibrations/local-cpu.yaml --batch 512 \
  >"$out/model-layer-calibrated.txt" 2>&1 || echo "exit $?" >>"$out/model-layer-calibrated.txt"
# 7. eval of a checkpoint trained here (one rank, one thread: the same bytes every time)
OMP_NUM_THREADS=1 "$exe" train --workload configs/workloads/pykan-exp-sin.yaml --epochs 3 --threads 1 \
  --checkpoint "$out/eval-model.safetensors" >/dev/null 2>&1
printf 'x0,x1\n0.5,0.1\n-0.25,0.75\n1,1\n' >"$out/eval-input.csv"
"$exe" eval --checkpoint "$out/eval-model.safetensors" --input "$out/eval-input.csv" >"$out/eval.txt" 2>&1 ||
  echo "exit $?" >>"$out/eval.txt"
echo "snapshot of $n cluster x workload pairs, refits, published and collect in $out"
