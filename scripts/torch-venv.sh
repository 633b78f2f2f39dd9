#!/bin/bash
# Make a virtual environment with a current torch from PyPI, for validation
# only (never CI, which uses Debian's torch 1.13). PyPI has no CPU-only torch:
# the wheel pulls NVIDIA's CUDA libraries, about 3 GB, which it prints before
# downloading (numpy too, which torch 2.x warns without). Wheels are cached outside the repository.
#
#   scripts/torch-venv.sh [VERSION] [DIR]
#     VERSION  default 2.11.0, the version on the GPU machine this project is lent
#     DIR      default ~/.cache/kanscale/torch-VERSION
#   then:  kanscale calibrate|validate|train|measure|bench --python DIR/bin/python ...
#
# Environment: PIP_CACHE_DIR (default ~/.cache/kanscale/pip), KANSCALE_VENV_YES=1
# to skip the question, BASE_PYTHON (default /usr/bin/python3, which needs
# Debian's python3-venv).
set -euo pipefail
version="${1:-2.11.0}"
dir="${2:-$HOME/.cache/kanscale/torch-$version}"
base="${BASE_PYTHON:-/usr/bin/python3}"
export PIP_CACHE_DIR="${PIP_CACHE_DIR:-$HOME/.cache/kanscale/pip}"
export PIP_DISABLE_PIP_VERSION_CHECK=1

case "$version" in
  *[!0-9.]*|'') echo "torch-venv: version '$version' is not of the form 2.11.0" >&2; exit 2;;
esac
if [ -x "$dir/bin/python" ] && "$dir/bin/python" -c 'import sys, torch; sys.exit(torch.__version__.split("+")[0] != sys.argv[1])' "$version" 2>/dev/null; then
  echo "torch-venv: $dir already has torch $version"
  exit 0
fi
if [ -e "$dir" ] && [ ! -e "$dir/pyvenv.cfg" ]; then
  echo "torch-venv: $dir exists and is not a virtual environment; not touching it" >&2
  exit 2
fi
"$base" -m venv "$dir" || { echo "torch-venv: '$base -m venv' failed (apt-get install python3-venv)" >&2; exit 1; }

# What pip would fetch, and its size, before fetching it: pip's resolver
# report names each wheel's URL; a HEAD request gives each one's length.
report="$(mktemp)"
trap 'rm -f "$report"' EXIT
"$dir/bin/python" -m pip install --quiet --dry-run --ignore-installed \
  --report "$report" "torch==$version" numpy
"$dir/bin/python" - "$report" <<'EOF'
import json, sys, urllib.request
items = json.load(open(sys.argv[1]))["install"]
total = 0
for it in items:
    url = it["download_info"]["url"]
    req = urllib.request.Request(url, method="HEAD")
    try:
        size = int(urllib.request.urlopen(req, timeout=30).headers.get("Content-Length", 0))
    except Exception:
        size = 0
    total += size
    print(f"  {size / 2**20:9.1f} MiB  {url.rsplit('/', 1)[-1]}")
print(f"torch-venv: {len(items)} wheels, {total / 2**30:.2f} GiB to download "
      f"(less what {__import__('os').environ['PIP_CACHE_DIR']} already holds)")
EOF
if [ "${KANSCALE_VENV_YES:-0}" != 1 ]; then
  read -r -p "download them? [y/N] " answer
  [ "$answer" = y ] || [ "$answer" = Y ] || { echo "torch-venv: nothing downloaded"; exit 1; }
fi
"$dir/bin/python" -m pip install --quiet "torch==$version" numpy
"$dir/bin/python" -c 'import sys, torch; print("torch-venv: torch", torch.__version__, "in", sys.argv[1])' "$dir"
echo "use it with: --python $dir/bin/python"
