#!/bin/bash
# The GPU proof, run on the device machine (one H200) in one call: build for
# sm_90 only, the CUDA tests, the CUDA kernel microbenchmarks and the
# single-GPU validation plan, then issue 56's scaling check on its CPU cores.
# Everything lands under $OUT in five files: machine.txt, gpu-proof.tar.gz
# (build.log, cuda_tests.txt, kernels-cuda.json, kernels.txt, validate.txt,
# calibrate-pytorch-gpu.txt, scaling-mpi.txt, scaling-pytorch.txt, the
# single-GPU report and results), pytorch-gpu.tar.gz (the PyTorch GPU
# calibration's results and traces), scaling-check-mpi.tar.gz and
# scaling-check-pytorch.tar.gz.
# Each step has its own time limit so that what finished comes back even
# when a later step runs long. Prepare here with scripts/gpu-proof-deps.sh.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/gpu-proof-out}
mkdir -p "$OUT"
t0=$(date +%s)
stage() { echo "== $(($(date +%s) - t0)) s: $*" | tee -a "$OUT/machine.txt"; }
# a stage's time limit: its own, or what is left of 450 s (the GPU proof and
# the scaling check stay under 8 minutes together), at least 10 s
budget() { local left=$((450 - ($(date +%s) - t0))); [ "$left" -lt "$1" ] && echo $((left > 10 ? left : 10)) || echo "$1"; }

{
  date -u +%Y-%m-%dT%H:%M:%SZ
  uname -a
  grep -m1 'model name' /proc/cpuinfo
  nproc
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv 2>&1
  command -v nvcc || ls /usr/local/cuda/bin/nvcc
  (nvcc --version || /usr/local/cuda/bin/nvcc --version) 2>&1 | tail -2
  cmake --version | head -1
  (g++ --version || c++ --version) 2>&1 | head -1
  command -v mpirun || echo "no mpirun"
} >"$OUT/machine.txt" 2>&1

# 1. the Debian packages carried in .deps/, unpacked beside the system (not over it)
deps=/tmp/ks-deps
if ls .deps/*.deb >/dev/null 2>&1; then
  mkdir -p "$deps"
  for f in .deps/*.deb; do dpkg-deb -x "$f" "$deps" || dpkg -x "$f" "$deps"; done
fi
export LD_LIBRARY_PATH="$deps/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
# Open MPI from the carried packages when the image has none: dpkg -x makes no
# alternatives links (mpirun -> mpirun.openmpi), and OPAL_PREFIX tells the
# relocated wrappers and mpirun where their files are
if ! command -v mpirun >/dev/null 2>&1 && [ -x "$deps/usr/bin/mpirun.openmpi" ]; then
  for t in mpirun mpiexec mpicc mpicxx; do
    [ -e "$deps/usr/bin/$t.openmpi" ] && ln -sf "$t.openmpi" "$deps/usr/bin/$t"
  done
  export PATH="$deps/usr/bin:$PATH" OPAL_PREFIX="$deps/usr"
  echo "MPI: the carried Open MPI ($deps/usr/bin/mpirun, OPAL_PREFIX=$OPAL_PREFIX)" >>"$OUT/machine.txt"
fi

# 2. NCCL: the toolkit's, or the one PyTorch's wheels bring (nvidia-nccl-*),
# exposed as NCCL_HOME/{include,lib/libnccl.so}
nccl=/tmp/ks-nccl
header=$(ls /usr/local/cuda/include/nccl.h /usr/include/nccl.h 2>/dev/null | head -1)
if [ -z "$header" ]; then
  header=$(python3 -c 'import nvidia, os; print(" ".join(nvidia.__path__))' 2>/dev/null | xargs -r -n1 -I{} find {} -name nccl.h 2>/dev/null | head -1)
fi
if [ -n "$header" ]; then
  libdir=$(dirname "$(dirname "$header")")/lib
  lib=$(ls "$libdir"/libnccl.so* /usr/local/cuda/lib64/libnccl.so* /usr/lib/x86_64-linux-gnu/libnccl.so* 2>/dev/null | head -1)
  mkdir -p "$nccl/include" "$nccl/lib"
  ln -sf "$header" "$nccl/include/nccl.h"
  [ -n "$lib" ] && ln -sf "$lib" "$nccl/lib/libnccl.so" && ln -sf "$lib" "$nccl/lib/$(basename "$lib")"
  export LD_LIBRARY_PATH="$nccl/lib:$LD_LIBRARY_PATH"
  echo "NCCL: $header, ${lib:-no library}" >>"$OUT/machine.txt"
else
  echo "NCCL: not found (the NCCL backend will be off)" >>"$OUT/machine.txt"
fi

# 3. build: sm_90 only, the executable, the CUDA plugin and the CUDA tests
stage "configure"
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DCMAKE_PREFIX_PATH="$deps/usr" \
  -DNCCL_HOME="$nccl" >"$OUT/build.log" 2>&1 || { stage "configure failed"; exit 1; }
stage "build"
timeout 240 cmake --build build-gpu -j"$(nproc)" --target kanscale kanscale_cuda cuda_tests kanscale_data >>"$OUT/build.log" 2>&1 ||
  { stage "build failed"; tail -50 "$OUT/build.log"; exit 1; }
stage "cuda_tests"
timeout 60 build-gpu/tests/cuda_tests >"$OUT/cuda_tests.txt" 2>&1
echo "exit $?" >>"$OUT/cuda_tests.txt"
stage "measure kernels --backend cuda"
timeout 60 build-gpu/cli/kanscale measure kernels --backend cuda --plan configs/measure/gpu-default.yaml \
  --json "$OUT/kernels-cuda.json" >"$OUT/kernels.txt" 2>&1
echo "exit $?" >>"$OUT/kernels.txt"
stage "validate single-gpu"
timeout "$(budget 150)" build-gpu/cli/kanscale validate validation/plans/single-gpu.yaml --out /tmp/single-gpu >"$OUT/validate.txt" 2>&1
echo "exit $?" >>"$OUT/validate.txt"
cp /tmp/single-gpu/report.md "$OUT/single-gpu-report.md" 2>/dev/null
cp /tmp/single-gpu/results.json "$OUT/single-gpu-results.json" 2>/dev/null
# 4. the GPU node's PyTorch calibration (issue 59), its one-GPU part, one
# round, on the image's torch: profiled runs (their traces: this project's
# own KAN job on a GPU, the CUDA fixture to come) and live runs, fitted
stage "calibrate pytorch-gpu (1 GPU, 1 round)"
if python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' >/dev/null 2>&1; then
  timeout "$(budget 120)" build-gpu/cli/kanscale calibrate configs/calibrate/pytorch-gpu.yaml --rounds 1 --out /tmp/pytorch-gpu \
    --python "$(command -v python3)" >"$OUT/calibrate-pytorch-gpu.txt" 2>&1
  echo "exit $?" >>"$OUT/calibrate-pytorch-gpu.txt"
  (cd /tmp && tar -czf "$OUT/pytorch-gpu.tar.gz" pytorch-gpu/results pytorch-gpu/cases 2>/dev/null)
else
  echo "no CUDA build of torch for $(command -v python3): the PyTorch GPU calibration did not run" >"$OUT/calibrate-pytorch-gpu.txt"
fi
# 5. issue 56's scaling check on the machine's CPU cores, calibrated at 1 and
# 2 ranks and judged up to 16: kanscale's trainer over MPI, then PyTorch DDP
# (gloo) on the image's torch; an archive each, each within what is left
for part in mpi pytorch; do
  stage "scaling check ($part)"
  if [ "$part" = mpi ] && ! command -v mpirun >/dev/null 2>&1; then
    echo "no mpirun (neither the image's nor the carried one): the MPI scaling check did not run" >"$OUT/scaling-$part.txt"
    continue
  fi
  if [ "$part" = pytorch ] && ! python3 -c 'import torch' >/dev/null 2>&1; then
    echo "no torch for $(command -v python3): the PyTorch scaling check did not run" >"$OUT/scaling-$part.txt"
    continue
  fi
  timeout "$(budget 150)" bash scripts/scaling-check.sh --parts "$part" --out "/tmp/scaling-$part" --kanscale build-gpu/cli/kanscale \
    --python "$(command -v python3)" >"$OUT/scaling-$part.txt" 2>&1
  echo "exit $?" >>"$OUT/scaling-$part.txt"
  cp "/tmp/scaling-$part/scaling-check.tar.gz" "$OUT/scaling-check-$part.tar.gz" 2>/dev/null
done
stage "done"
tail -n 3 "$OUT/cuda_tests.txt" "$OUT/kernels.txt" "$OUT/validate.txt" "$OUT/calibrate-pytorch-gpu.txt" "$OUT/scaling-mpi.txt" "$OUT/scaling-pytorch.txt"
# the device returns few files: everything but machine.txt and the archives in one
cd "$OUT" && tar -czf gpu-proof.tar.gz build.log cuda_tests.txt kernels-cuda.json kernels.txt validate.txt calibrate-pytorch-gpu.txt scaling-mpi.txt \
  scaling-pytorch.txt single-gpu-report.md single-gpu-results.json 2>/dev/null
rm -f build.log cuda_tests.txt kernels-cuda.json kernels.txt validate.txt calibrate-pytorch-gpu.txt scaling-mpi.txt scaling-pytorch.txt \
  single-gpu-report.md single-gpu-results.json
