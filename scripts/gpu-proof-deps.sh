#!/bin/bash
# Run HERE (a Debian 12 machine with network), before a device run: the
# device machine reaches no package registry, so the Debian packages the
# build needs travel with the working tree as .deb files in .deps/ (ignored
# through .git/info/exclude; about 12 MB). scripts/gpu-proof.sh unpacks them
# into /tmp/ks-deps there. Then call the device tool's run with
#   command: scripts/gpu-proof.sh      carry: [".deps"]      timeout_s: 480
set -euo pipefail
cd "$(dirname "$0")/.."
grep -qx '/.deps/' .git/info/exclude 2>/dev/null || echo '/.deps/' >>.git/info/exclude
mkdir -p .deps
cd .deps
apt-get -o DPkg::Lock::Timeout=120 download libyaml-cpp-dev libyaml-cpp0.7 libboost1.74-dev libboost-program-options1.74-dev \
  libboost-program-options1.74.0 libeigen3-dev nlohmann-json3-dev doctest-dev 2>&1 | grep -v '^W: Download is performed unsandboxed' || true
ls -la
du -sh .
