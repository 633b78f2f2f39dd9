#!/usr/bin/env bash
# Installs the Debian 12 packages kanscale builds and runs with. Idempotent:
# packages already present are left alone. Run as root (or with sudo).
set -euo pipefail
PKGS=(
  build-essential cmake pkg-config     # compiler and build system
  libboost-program-options-dev         # the kanscale command line
  libyaml-cpp-dev                      # configs: clusters, workloads, calibrations
  libeigen3-dev                        # least-squares fits (model/), the SGEMM reference
  libdnnl-dev                          # oneDNN sgemm: the CPU kernels' GEMMs (measure/kan_cpu.cpp)
  ocl-icd-opencl-dev                   # Debian's dnnl-config.cmake requires OpenCL (its GPU runtime); only recommended, so named here
  nlohmann-json3-dev                   # JSON output and Chrome traces
  doctest-dev                          # unit tests
  libopenmpi-dev openmpi-bin           # MPI collectives and the CPU data-parallel trainer
  gnuplot-nox                          # plots of kanscale study (run as a process from the .gp scripts it writes)
  python3-torch python3-numpy          # real PyTorch DDP jobs of efficient-kan (kanscale train, implementation: pytorch)
  libopenblas0-pthread                 # the BLAS torch runs on (the reference libblas3 is 2-3x slower)
  shellcheck                           # the tests check every job script validate --emit writes
)
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#PKGS[@]} packages already installed"
  exit 0
fi
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO=sudo
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get -o DPkg::Lock::Timeout=120 update -q
$SUDO apt-get -o DPkg::Lock::Timeout=120 install -y -q --no-install-recommends "${missing[@]}"
