#!/usr/bin/env bash
# Issue 56: the packages scripts/gpu-proof-deps.sh carries to the device
# machine (which reaches no registry) are enough to configure and build
# kanscale there. Downloads them, unpacks them into a fresh prefix as
# scripts/gpu-proof.sh does, and configures and builds the executable with
# CMake finding packages, libraries and headers in that prefix alone
# (CMAKE_FIND_ROOT_PATH, mode ONLY) and MPI through the carried wrapper, so a
# package missing from the list fails here, in CI, not in a lent session.
# (The compiler and nvcc stay the system's: the device image has its own.)
# Usage: scripts/carried-deps-check.sh
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/gpu-proof-deps.sh >/dev/null
work=$(mktemp -d /tmp/kanscale-carried.XXXXXX)
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix
mkdir -p "$prefix"
for f in .deps/*.deb; do dpkg-deb -x "$f" "$prefix"; done
echo "carried-deps-check: $(ls .deps/*.deb | wc -l) packages, $(du -sh .deps | cut -f1) in .deps"
for t in mpicc mpicxx mpirun; do ln -sf "$t.openmpi" "$prefix/usr/bin/$t"; done
export OPAL_PREFIX=$prefix/usr LD_LIBRARY_PATH=$prefix/usr/lib/x86_64-linux-gnu
cmake -S . -B "$work/build" -DCMAKE_BUILD_TYPE=Release -DKANSCALE_TESTS=OFF -DKANSCALE_CUDA=OFF \
  -DCMAKE_FIND_ROOT_PATH="$prefix" -DCMAKE_FIND_ROOT_PATH_MODE_PACKAGE=ONLY -DCMAKE_FIND_ROOT_PATH_MODE_LIBRARY=ONLY \
  -DCMAKE_FIND_ROOT_PATH_MODE_INCLUDE=ONLY -DCMAKE_FIND_ROOT_PATH_MODE_PROGRAM=NEVER \
  -DMPI_CXX_COMPILER="$prefix/usr/bin/mpicxx" >"$work/configure.log" 2>&1 || { tail -30 "$work/configure.log"; exit 1; }
# every package the configure found came from the prefix
for pkg in yaml-cpp Eigen3 Boost nlohmann_json dnnl; do
  dir=$(grep -E "^${pkg}_DIR:" "$work/build/CMakeCache.txt" | cut -d= -f2-)
  case "$dir" in "$prefix"/*) ;; *) echo "carried-deps-check: $pkg found outside the carried packages: ${dir:-not found}"; exit 1 ;; esac
done
grep -qE "kanscale: MPI .* found: MPI backends enabled" "$work/configure.log" || { echo "carried-deps-check: the carried Open MPI was not found"; grep -i mpi "$work/configure.log"; exit 1; }
cmake --build "$work/build" -j"$(nproc)" --target kanscale >"$work/build.log" 2>&1 || { tail -30 "$work/build.log"; exit 1; }
"$work/build/cli/kanscale" --version | grep -q "MPI yes"
echo "carried-deps-check: configured from the carried packages alone and built kanscale (MPI from the carried Open MPI)"
