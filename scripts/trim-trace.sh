#!/usr/bin/env bash
# Cuts a torch.profiler Chrome trace (JSON, or gzipped JSON) down to a time
# window, for a test fixture: the metadata events (ph M), every complete
# event that starts in [FROM_US, FROM_US + SPAN_US) counted from the trace's
# first complete event, and every GPU kernel, memcpy or memset whose launch
# (the CUDA runtime call with the same args.correlation) was kept, wherever
# it ran. Everything else of each event is kept as it was; the top-level
# keys (distributedInfo, deviceProperties, ...) too. With a fifth argument
# `bare`, each event keeps only name, ph, cat, ts, dur, pid, tid and, of its
# args, correlation, device, stream, id and parent (what formats/torch_trace reads).
# Usage: scripts/trim-trace.sh IN.json[.gz] OUT.json FROM_US SPAN_US [bare]
# Needs jq. Writes OUT.json through a temporary file and prints the sizes.
set -euo pipefail
if [ $# -ne 4 ] && ! { [ $# -eq 5 ] && [ "$5" = bare ]; }; then
  echo "usage: $0 IN.json[.gz] OUT.json FROM_US SPAN_US [bare]" >&2
  exit 2
fi
in=$1 out=$2 from=$3 span=$4 bare=${5:-}
case "$from$span" in *[!0-9]*) echo "$0: FROM_US and SPAN_US must be whole microseconds" >&2; exit 2 ;; esac
command -v jq >/dev/null || { echo "$0: needs jq (apt-get install jq)" >&2; exit 2; }
read_in() { case "$in" in *.gz) gzip -dc -- "$in" ;; *) cat -- "$in" ;; esac; }
tmp=$(mktemp "$(dirname -- "$out")/.trim.XXXXXX")
trap 'rm -f -- "$tmp"' EXIT
read_in | jq --indent 1 --argjson from "$from" --argjson span "$span" --arg bare "$bare" '
  (.traceEvents | map(select(.ph == "X")) | min_by(.ts).ts) as $t0
  | ($t0 + $from) as $a | ($a + $span) as $b
  | def inside: .ph == "X" and .ts >= $a and .ts < $b;
    def device: .cat == "kernel" or .cat == "gpu_memcpy" or .cat == "gpu_memset";
    ([.traceEvents[] | select(inside and (device | not)) | .args.correlation? // empty] | unique) as $launched
  | .traceEvents |= map(select(.ph == "M" or ((device | not) and inside)
                               or (device and ((.args.correlation? // -1) as $c | ($launched | bsearch($c)) >= 0))))
  | if $bare == "bare" then .traceEvents |= map(
        if .ph == "X" then {name, ph, cat, ts, dur, pid, tid}
                           + (if .args then {args: (.args | with_entries(select(.key == "correlation" or .key == "device" or .key == "stream" or .key == "id" or .key == "parent")))} else {} end)
                           | with_entries(select(.value != null and .value != {}))
        else . end) else . end' > "$tmp"
mv -- "$tmp" "$out"
trap - EXIT
echo "$in: $(read_in | wc -c) bytes -> $out: $(wc -c < "$out") bytes, $(jq '.traceEvents | length' "$out") events"
