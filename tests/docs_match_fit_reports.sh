#!/usr/bin/env bash
# ctest docs_match_fit_reports (issue 54): every figure a document or a
# shipped config's comment states about a shipped calibration comes from that
# calibration's own fit report. Each such figure carries a marker before it,
#   <!-- fit: configs/calibrations/pytorch-cpu/fit-report.txt -->1.29
# and the first number after the marker must stand in the named report as a
# number of its own (1.29 matches "1.29x" and "x 1.29", not "11.29" or
# "1.291"). Fails on a figure the report lacks, a report that is missing, and
# when no marker is found at all (the check would be vacuous).
# Usage: tests/docs_match_fit_reports.sh SOURCE_DIR
set -euo pipefail
cd "${1:?usage: docs_match_fit_reports.sh SOURCE_DIR}"
files=(README.md docs/*.md)
while IFS= read -r f; do files+=("$f"); done < <(find configs -name '*.yaml' | sort)
checked=0 bad=0
while IFS=: read -r file line rest; do
  report=$(sed -E 's/^.*<!-- fit: ([^ ]+) -->.*$/\1/' <<<"$rest")
  figure=$(sed -E 's/^.*<!-- fit: [^ ]+ -->[^0-9+-]*([-+]?[0-9]+(\.[0-9]+)?).*$/\1/' <<<"$rest")
  if [ ! -f "$report" ]; then
    echo "$file:$line: the fit report $report does not exist"; bad=$((bad + 1)); continue
  fi
  if ! [[ $figure =~ ^[-+]?[0-9]+(\.[0-9]+)?$ ]]; then
    echo "$file:$line: no figure after the marker for $report"; bad=$((bad + 1)); continue
  fi
  esc=$(sed 's/[.+]/\\&/g' <<<"${figure#+}")
  if ! grep -qE "(^|[^0-9.])${esc}([^0-9]|\.([^0-9]|$)|$)" "$report"; then
    echo "$file:$line: $figure is not in $report"; bad=$((bad + 1)); continue
  fi
  checked=$((checked + 1))
done < <(grep -noE '<!-- fit: [^ ]+ -->[^0-9+-]{0,3}[-+]?[0-9]+(\.[0-9]+)?' "${files[@]}" | sed -E 's/^([^:]+):([0-9]+):/\1:\2:/')
markers=$(cat "${files[@]}" | grep -oE '<!-- fit: ' | wc -l)
if [ "$markers" -ne $((checked + bad)) ]; then
  echo "docs_match_fit_reports: $markers marker(s), but $((checked + bad)) with a figure on their line"
  grep -nE '<!-- fit: ' "${files[@]}" | grep -vE '<!-- fit: [^ ]+ -->[^0-9+-]{0,3}[-+]?[0-9]' || true
  bad=$((bad + 1))
fi
echo "docs_match_fit_reports: $checked figure(s) match their fit reports, $bad problem(s)"
[ "$bad" -eq 0 ] && [ "$checked" -gt 0 ]
