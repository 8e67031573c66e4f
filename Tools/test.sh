#!/usr/bin/env bash
# The test command: installs what is missing, builds everything, runs the whole suite.
#
#   Tools/test.sh                       the whole suite, every fault point
#   Tools/test.sh --sanitize thread     the same under ThreadSanitizer, built in .build-tsan
#   Tools/test.sh --sanitize address    the same under AddressSanitizer, built in .build-asan
#
# Under a sanitizer the fault and power-loss suites take every 20th fault point
# (BLOBCACHE_FAULT_STRIDE, docs/RELIABILITY.md). Each sanitizer runs the tests it can see
# something in: ThreadSanitizer the tests that run threads in this process
# (THREAD_TESTS below), AddressSanitizer every test but those whose work is in child processes
# (ADDRESS_SKIP below: the CLI, SIGKILLed writers and rekeys run the same engine code the
# in-process tests run) and the saved fuzz inputs (Tools/fuzz.sh replays them under
# AddressSanitizer). Under either sanitizer only the engine is built (BLOBCACHE_CORE_ONLY): the
# remote tier's stores, `serve` and their tests against real servers (nginx, redis-server,
# ccache, curl: installed as root) are the plain run's. Other arguments go to `swift test`
# instead of the selection (for example --filter FaultTests). Exit status: swift test's (a
# sanitizer report fails the run).
set -euo pipefail
cd "$(dirname "$0")/.."
Tools/ensure-deps.sh --servers
build=()
# The tests that run threads in this process (ThreadSanitizer sees nothing in the others): the
# stress test, snapshot restores (three tasks at once), replays (CRCs checked on another core),
# async and single-flight callers,
# observers, the memory tier's async reads, sets racing a rekey, and every large-value path that
# hashes, compresses, reads or decodes on every core, or streams a value (a writer's queue, a
# reader moved between threads).
THREAD_TESTS='StreamingTests/|StressTests/|CheckpointTests/checkpointsAmidThreads|EarlyStagingTests/|SnapshotTests/|ReplayTests/|HostileBytesTests/forgedSnapshot|APITests/(asyncAccess|threads|codableChoices)|SingleFlightTests/|ObserverTests/|MemoryTierTests/asyncReadsFromMemory|NamespaceTests/asyncForms|StatisticsTests/metricsAndLogging|EncryptionDefectTests/setsRacingARekey|OpenWhileDecodingTests/|RawReadTests/|CodecTests/(damagedLargeLZ4|parallelFrameMatchesLZ4F)|BlobStoreTests/(largeLooseCorruption|largeValues)'
# Left out under AddressSanitizer: the suites whose work is in child processes (the CLI, SIGKILLed
# writers and rekeys), whose code the in-process suites run too, and the saved fuzz inputs, which
# Tools/fuzz.sh replays under AddressSanitizer.
ADDRESS_SKIP='CrashTests/|RekeyTests/|CLITests/|CLIStreamingTests/|CLIEdgeTests/|EncryptionCLITests/|FsckTests/|BoundedResourcesTests/|FuzzCorpusTests/|MultiProcessTests/(writersKilledMidRun|cappedWritersKilledMidRun|lockWait)'
if [[ ${1:-} == --sanitize ]]; then
  sanitizer=${2:?"--sanitize takes thread or address"}
  shift 2
  case $sanitizer in
    thread) folder=.build-tsan; [[ $# -eq 0 ]] && set -- --filter "$THREAD_TESTS" ;;
    address) folder=.build-asan; [[ $# -eq 0 ]] && set -- --skip "$ADDRESS_SKIP" ;;
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
