#!/usr/bin/env bash
# The test command: installs what is missing, builds everything, runs the whole suite.
set -euo pipefail
cd "$(dirname "$0")/.."
Tools/ensure-deps.sh
swift build --build-tests
swift test --skip-build "$@"
