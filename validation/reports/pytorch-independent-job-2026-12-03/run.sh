#!/bin/bash
# run.sh OUT "WIDTHS GRID BATCH CAP_MB"...: the job at 1 and 2 ranks per case
# (torch's env rendezvous, 1 thread a rank); rank 0 appends one JSON line to OUT
out=$1; shift
: > "$out"
port=29800
for case in "$@"; do
  read -r widths grid batch cap <<<"$case"
  for np in 1 2; do
    port=$((port+1))
    for r in $(seq 0 $((np-1))); do
      MASTER_ADDR=127.0.0.1 MASTER_PORT=$port RANK=$r WORLD_SIZE=$np OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 \
        /usr/bin/python3 "$(dirname "$0")"/kan_ddp_job.py "$widths" "$grid" "$batch" "$cap" >> "$out" &
    done
    wait
  done
done
