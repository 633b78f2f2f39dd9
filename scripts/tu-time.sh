#!/usr/bin/env bash
# A compiler launcher that times each translation unit (issue 29): CMake runs
# it as `tu-time.sh COMPILER ARGS...` when configured with
# -DCMAKE_CXX_COMPILER_LAUNCHER=scripts/tu-time.sh (scripts/build.sh does so
# with KANSCALE_TU_TIMES=FILE). It appends "seconds<TAB>object" to the file
# named by KANSCALE_TU_TIMES and exits with the compiler's status.
set -uo pipefail
obj="?"
prev=""
for a in "$@"; do
  [ "$prev" = "-o" ] && obj=$a
  prev=$a
done
start=$(date +%s.%N)
"$@"
rc=$?
end=$(date +%s.%N)
if [ -n "${KANSCALE_TU_TIMES:-}" ]; then
  awk -v a="$start" -v b="$end" -v o="$obj" 'BEGIN { printf "%.2f\t%s\n", b - a, o }' >>"$KANSCALE_TU_TIMES"
fi
exit $rc
