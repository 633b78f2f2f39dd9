#!/usr/bin/env bash
# Issue 54's install check, run by CI: builds the .deb (cpack), installs it
# into a fresh prefix (dpkg -x), runs the README's main job from an empty
# directory with the installed binary, and compares its output with the
# build tree's; then does the same with `cmake --install` into another
# prefix, with a copy of that binary moved away from both, and checks that
# the installed binary holds no path of the source tree.
# Usage: scripts/install-check.sh BUILD_DIR
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:?usage: install-check.sh BUILD_DIR}" && pwd)
work=$(mktemp -d /tmp/kanscale-install-check.XXXXXX)
trap 'rm -rf "$work"' EXIT
main_job=(simulate --cluster configs/clusters/finisterrae3.yaml --workload configs/workloads/default.yaml --gpus 1,2,4,8)
# output without the provenance (it names the executable and the time)
run_main() { (cd "$1" && "$2" "${main_job[@]}") | grep -v '^# \|kanscale [0-9.]* (' ; }
expected=$(cd "$src" && run_main "$src" "$build/cli/kanscale")

(cd "$build" && cpack -G DEB -B "$work/package" >/dev/null)
deb=$(ls "$work"/package/kanscale_*.deb)
echo "install-check: built $(basename "$deb") ($(du -h "$deb" | cut -f1)); depends: $(dpkg-deb -f "$deb" Depends | cut -c1-200)"
dpkg-deb -f "$deb" Recommends | grep -q python3-torch
! dpkg-deb -c "$deb" | grep -q libkanscale_cuda  # the CUDA plugin stays out of the package
dpkg-deb -x "$deb" "$work/deb-root"
mkdir "$work/empty"
got=$(run_main "$work/empty" "$work/deb-root/usr/bin/kanscale")
[ "$got" = "$expected" ] || { echo "install-check: the .deb's kanscale answers differently"; diff <(echo "$expected") <(echo "$got") | head; exit 1; }
"$work/deb-root/usr/bin/kanscale" --version | grep -q "^data: $work/deb-root/usr/share/kanscale (from executable)$"
echo "install-check: the .deb's kanscale, run from an empty directory, gives the build's answer"

cmake --install "$build" --prefix "$work/prefix" >/dev/null
got=$(run_main "$work/empty" "$work/prefix/bin/kanscale")
[ "$got" = "$expected" ] || { echo "install-check: the installed kanscale answers differently"; exit 1; }
# moved away from the source tree and the prefix: it finds its data through KANSCALE_DATA
mkdir "$work/elsewhere" && cp "$work/prefix/bin/kanscale" "$work/elsewhere/"
got=$(KANSCALE_DATA="$work/prefix/share/kanscale" run_main "$work/empty" "$work/elsewhere/kanscale")
[ "$got" = "$expected" ] || { echo "install-check: the moved kanscale answers differently"; exit 1; }
if out=$(cd "$work/empty" && "$work/elsewhere/kanscale" "${main_job[@]}" 2>&1); then
  echo "install-check: a kanscale with no data directory answered: $out"; exit 1
fi
if strings "$work/prefix/bin/kanscale" | grep -qF "$src"; then
  echo "install-check: the installed binary holds a path of the source tree ($src)"; exit 1
fi
echo "install-check: cmake --install, the binary moved (KANSCALE_DATA), no source path in the binary: ok"
