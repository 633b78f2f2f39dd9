#!/bin/bash
# Compare two behaviour snapshots (scripts/behaviour-snapshot.sh) after
# removing what legitimately differs between them, the provenance: the
# snapshot's own path, the commit ("(0123456789ab)", "+dirty"), ISO dates,
# and in JSON files the keys kanscale_version, git_hash and date_utc wherever
# they sit (JSON is compared parsed, keys sorted). PNG files and checkpoints
# are skipped (gnuplot's PNGs are not byte-stable; their .gp scripts and
# data are compared, and eval's output stands for the checkpoint).
# Prints the differences; exits 1 when there are any.
# Usage: scripts/snapshot-diff.sh BEFORE AFTER
set -euo pipefail
a=$(realpath "$1")
b=$(realpath "$2")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python3 - "$a" "$b" "$work" <<'PY'
import json, os, re, sys
src_a, src_b, work = sys.argv[1:4]
commit = re.compile(r'\b[0-9a-f]{12}(\+dirty)?\b(?=\)|"|,|\s)')
date = re.compile(r'[0-9]{4}-[0-9]{2}-[0-9]{2}[T ][0-9]{2}:[0-9]{2}:[0-9]{2}Z?')
def text(s, root):
    s = s.replace(root, '@OUT@')
    s = re.sub(r'\(([0-9a-f]{12})(\+dirty)?\)', '(@COMMIT@)', s)
    s = re.sub(r'kanscale ([0-9.]+), [0-9a-f]{12}(\+dirty)?', r'kanscale \1 (@COMMIT@)', s)
    return date.sub('@DATE@', s)
def strip(j, root):
    if isinstance(j, dict):
        return {k: strip(v, root) for k, v in j.items() if k not in ('kanscale_version', 'git_hash', 'date_utc')}
    if isinstance(j, list):
        return [strip(v, root) for v in j]
    if isinstance(j, str):
        return text(j, root)
    return j
for root, tag in ((src_a, 'before'), (src_b, 'after')):
    for d, _, files in os.walk(root):
        for f in files:
            if f.endswith(('.png', '.safetensors')):
                continue
            p = os.path.join(d, f)
            out = os.path.join(work, tag, os.path.relpath(p, root))
            os.makedirs(os.path.dirname(out), exist_ok=True)
            raw = open(p, encoding='utf-8', errors='replace').read()
            if f.endswith('.json'):
                try:
                    raw = json.dumps(strip(json.loads(raw), root), indent=1, sort_keys=True) + '\n'
                except ValueError:
                    raw = text(raw, root)
            else:
                raw = text(raw, root)
            open(out, 'w').write(raw)
PY
cd "$work" && diff -r before after
