#!/bin/sh
# Runs libFuzzer targets one after another (docs/fuzzing.md), each for
# SECONDS (default 600), niced; new corpus entries and crash artifacts go
# under BUILD/fuzz-work/, the log of each run to BUILD/fuzz-work/TARGET.log.
#   tests/fuzz/run_fuzzers.sh BUILD [SECONDS] [TARGET...]
set -eu
build=$(cd "$1" && pwd)
seconds=${2:-600}
shift; [ $# -gt 0 ] && shift
src=$(cd "$(dirname "$0")/../.." && pwd)
targets=${*:-"cluster workload calibration measure_plan validation_plan sweep_json kernels_json interference_json progress_json validation_results nccl_log safetensors eval_csv torch_trace"}
for t in $targets; do
  work=$build/fuzz-work/$t
  mkdir -p "$work/corpus" "$work/artifacts" "$src/tests/fuzz/regressions/$t"
  echo "== $t: $seconds s, $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  # -timeout: one input over 10 s is a hang; -rss_limit_mb: a blow-up
  nice -n 10 "$build/tests/fuzz/fuzz_$t" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
    -artifact_prefix="$work/artifacts/" -print_final_stats=1 \
    "$work/corpus" "$src/tests/fuzz/corpus/$t" "$src/tests/fuzz/regressions/$t" >"$work/../$t.log" 2>&1 || true
  grep -E "^Done|^#[0-9]+.*(DONE|pulse|NEW|REDUCE)|ERROR|SUMMARY" "$work/../$t.log" | tail -3
done
