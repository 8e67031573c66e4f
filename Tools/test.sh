#!/usr/bin/env bash
# The test command: installs what is missing, builds everything, runs the whole suite.
#
#   Tools/test.sh                       the whole suite, every fault point
#   Tools/test.sh --sanitize thread     the same under ThreadSanitizer, built in .build-tsan
#   Tools/test.sh --sanitize address    the same under AddressSanitizer, built in .build-asan
#
# Under a sanitizer the fault and power-loss suites take every 20th fault point, also under
# ThreadSanitizer, the slowest (BLOBCACHE_FAULT_STRIDE, docs/RELIABILITY.md), and the SIGKILL
# suite makes a half of its kills, a fifth under ThreadSanitizer (BLOBCACHE_KILLS_SCALE). Under
# ThreadSanitizer only the suites that run threads are run (THREAD_SUITES below: concurrency,
# many opens, async, single-flight, observers, memory tier, namespaces, statistics, the model,
# the store, replay and snapshots); the tests whose work is in child processes and the
# single-threaded sweeps are the plain run's (and ASan's) alone. Under either sanitizer only the
# engine is built (BLOBCACHE_CORE_ONLY): the remote tier's stores, `serve` and their tests against
# real servers (nginx, redis-server, ccache, curl: installed as root) are the plain run's. Other arguments
# go to `swift test` (for example --filter FaultTests). Exit status: swift test's (a sanitizer
# report fails the run).
set -euo pipefail
cd "$(dirname "$0")/.."
Tools/ensure-deps.sh --servers
build=()
THREAD_SUITES='StressTests|MultiProcessTests|APITests|SingleFlightTests|ObserverTests|MemoryTierTests|NamespaceTests|StatisticsTests|ModelTests|BlobStoreTests|ReviewDefectTests|JournalRecoveryTests|SnapshotTests|LimitsTests'
if [[ ${1:-} == --sanitize ]]; then
  sanitizer=${2:?"--sanitize takes thread or address"}
  shift 2
  case $sanitizer in
    thread) folder=.build-tsan; [[ $# -eq 0 ]] && set -- --filter "$THREAD_SUITES"; export BLOBCACHE_FAULT_STRIDE=${BLOBCACHE_FAULT_STRIDE:-20} BLOBCACHE_KILLS_SCALE=${BLOBCACHE_KILLS_SCALE:-5} ;;
    address) folder=.build-asan; export BLOBCACHE_KILLS_SCALE=${BLOBCACHE_KILLS_SCALE:-2} ;;
    *) echo "test.sh: unknown sanitizer $sanitizer (thread or address)" >&2; exit 2 ;;
  esac
  build=(--sanitize="$sanitizer" --scratch-path "$folder")
  # The engine only: the networking modules and their tests are the plain run's (Package.swift).
  export BLOBCACHE_CORE_ONLY=1
  export BLOBCACHE_SANITIZER=$sanitizer
  export BLOBCACHE_FAULT_STRIDE=${BLOBCACHE_FAULT_STRIDE:-20}
  export TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=0}
  export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
  export LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$PWD/Tools/lsan.supp}
fi
swift build --build-tests "${build[@]}"
swift test --skip-build "${build[@]}" "$@"
