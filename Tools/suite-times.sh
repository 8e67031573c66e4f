#!/usr/bin/env bash
# Times every test suite alone, to see where the test run's time goes (how CI's selections in
# Tools/test.sh were chosen). Run after a build of the tests (Tools/test.sh, or
# `swift build --build-tests`); arguments go to `swift test` (for example
# `--sanitize=thread --scratch-path .build-tsan`); SUITES=REGEX times only the suites it matches.
# Prints one line a suite, most CPU first:
#   CPU-SECONDS (user + sys, child processes included)  WALL-SECONDS  SUITE  [failed]
set -euo pipefail
cd "$(dirname "$0")/.."
report=$(mktemp)
trap 'rm -f "$report" "$report.time"' EXIT
for suite in $(swift test list --skip-build "$@" 2>/dev/null | sed -E 's|/.*||' | sort -u | grep -E "${SUITES:-.}"); do
  status=""
  /usr/bin/time -o "$report.time" -f "%e %U %S" swift test --skip-build "$@" --filter "$suite/" >/dev/null 2>&1 || status=failed
  read -r wall user sys < <(tail -1 "$report.time")
  awk -v w="$wall" -v u="$user" -v s="$sys" -v n="$suite" -v f="$status" \
    'BEGIN { printf "%8.1f %8.1f  %s %s\n", u + s, w, n, f }' >> "$report"
done
sort -rn "$report"
