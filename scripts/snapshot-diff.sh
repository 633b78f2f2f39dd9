#!/bin/bash
# Compare two behaviour snapshots (scripts/behaviour-snapshot.sh) after
# removing what legitimately differs between them: the snapshot's own path,
# the commit hash (12 hex digits, +dirty) and ISO timestamps. PNG files are
# skipped (gnuplot's are not byte-stable; their .gp scripts and data are
# compared). Prints the differences; exits 1 when there are any.
# Usage: scripts/snapshot-diff.sh BEFORE AFTER
set -euo pipefail
a=$(realpath "$1")
b=$(realpath "$2")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
normalise() {
  local src=$1 dst=$2
  (cd "$src" && find . -type f ! -name '*.png' ! -name '*.safetensors' -print0) | while IFS= read -r -d '' f; do
    mkdir -p "$dst/$(dirname "$f")"
    sed -E -e "s#$src#@OUT@#g" -e 's/[0-9a-f]{12}(\+dirty)?/@COMMIT@/g' \
      -e 's/[0-9]{4}-[0-9]{2}-[0-9]{2}[T ][0-9]{2}:[0-9]{2}:[0-9]{2}Z?/@DATE@/g' "$src/$f" >"$dst/$f"
  done
}
normalise "$a" "$work/before"
normalise "$b" "$work/after"
cd "$work" && diff -r before after
