#!/bin/bash
# Run HERE (a Debian 12 machine with network), before a device run: the
# device machine reaches no package registry, so the Debian packages the
# build needs travel with the working tree as .deb files in .deps/ (ignored
# by .gitignore, so only carry brings it; about 27 MB). scripts/gpu-proof.sh unpacks them
# into /tmp/ks-deps there. Then call the device tool's run with
#   command: scripts/gpu-proof.sh      carry: [".deps"]      timeout_s: 480
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p .deps
cd .deps
# what configure and the run need, with the shared libraries they load
# (issue 56: oneDNN and the OpenCL that Debian's dnnl-config.cmake requires
# came with the oneDNN GEMMs; Open MPI for the scaling check). About 27 MB.
pkgs=(
  libyaml-cpp-dev libyaml-cpp0.7 libboost1.74-dev libboost-program-options1.74-dev libboost-program-options1.74.0
  libeigen3-dev nlohmann-json3-dev doctest-dev
  libdnnl-dev libdnnl2 ocl-icd-opencl-dev ocl-icd-libopencl1 opencl-c-headers opencl-clhpp-headers
  libopenmpi-dev libopenmpi3 openmpi-bin openmpi-common libevent-core-2.1-7 libevent-pthreads-2.1-7 libfabric1 libhwloc15
  libhwloc-plugins libibverbs1 ibverbs-providers libnl-3-200 libnl-route-3-200 libpmix2 libpsm-infinipath1 libpsm2-2 libucx0
  librdmacm1 libmunge2 libnuma1
)
rm -f ./*.deb
apt-get -o DPkg::Lock::Timeout=120 download "${pkgs[@]}" 2>&1 | grep -v '^W: Download is performed unsandboxed' || true
missing=0
for p in "${pkgs[@]}"; do ls "${p}"_*.deb >/dev/null 2>&1 || { echo "gpu-proof-deps: $p was not downloaded"; missing=1; }; done
[ "$missing" -eq 0 ] || exit 1
ls -la
du -sh .
