#!/usr/bin/env bash
# Fuzzes BlobCache's parsers with libFuzzer (Tests/Fuzz, docs/SECURITY.md).
#
#   Tools/fuzz.sh TARGET [SECONDS]    replay TARGET's saved inputs, then fuzz it for SECONDS (default 60)
#   Tools/fuzz.sh all [SECONDS]       every target in turn, SECONDS each
#   Tools/fuzz.sh --replay [TARGET]   only run every saved input of Tests/Fuzz/Corpus once (all targets by default)
#
# TARGET: journal, packRecord, looseBlob, snapshot, config, stats, size.
# Builds Tests/Fuzz in .build-fuzz (release, -sanitize=fuzzer,address). Fuzzing starts from the
# committed seeds in Tests/Fuzz/Corpus/TARGET (never written) and a working corpus in
# .build-fuzz/corpus/TARGET; a crashing input is saved in .build-fuzz/crashes/TARGET: once the bug is
# fixed, commit it to Tests/Fuzz/Corpus/TARGET as a regression input (the test suite replays
# every corpus file too). Prints the executions per target; exit 1 on a crash.
set -euo pipefail
cd "$(dirname "$0")/.."
Tools/ensure-deps.sh
# The fuzz package needs the engine alone: its manifest then resolves no networking packages.
export BLOBCACHE_CORE_ONLY=1
# Its targets call `FuzzTarget`, which a release build of the library compiles only under
# BLOBCACHE_TESTING (Package.swift).
export BLOBCACHE_TESTING=1
targets=(journal packRecord looseBlob snapshot config stats size)
mode=fuzz
if [[ ${1:-} == --replay ]]; then
  mode=replay
  shift
fi
selected=${1:-all}
seconds=${2:-60}
if [[ $mode == fuzz && $# -lt 1 ]]; then
  echo "usage: Tools/fuzz.sh TARGET|all [SECONDS] | --replay [TARGET]   (TARGET: ${targets[*]})" >&2
  exit 2
fi
if [[ $selected != all ]]; then
  if [[ ! " ${targets[*]} " == *" $selected "* ]]; then
    echo "fuzz.sh: unknown target '$selected' (one of: ${targets[*]}, all)" >&2
    exit 2
  fi
  targets=("$selected")
fi
scratch=.build-fuzz
# Both sanitizers in one -sanitize flag (SwiftPM's two --sanitize flags become two swiftc flags,
# of which only the last instruments); --sanitize fuzzer keeps libFuzzer's main.
swift build --package-path Tests/Fuzz --scratch-path "$scratch" -c release \
  --sanitize fuzzer --sanitize address -Xswiftc -sanitize=fuzzer,address -Xswiftc -enable-testing
bin=$(swift build --package-path Tests/Fuzz --scratch-path "$scratch" -c release --show-bin-path)
export SWIFT_BACKTRACE=enable=no   # libFuzzer and ASan report crashes themselves
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0:allocator_may_return_null=1}
status=0
for target in "${targets[@]}"; do
  executable="$bin/Fuzz${target^}"
  seeds="Tests/Fuzz/Corpus/$target"
  # Every saved input once, whole (fuzzing reads them too, but cut to -max_len).
  inputs=("$seeds"/*)
  log=$("$executable" -runs=1 "${inputs[@]}" 2>&1) || { echo "$log" | tail -30; echo "fuzz.sh: $target: a saved input fails" >&2; status=1; continue; }
  echo "fuzz: $target: replayed ${#inputs[@]} saved inputs, no crash"
  [[ $mode == replay ]] && continue
  mkdir -p "$scratch/corpus/$target" "$scratch/crashes/$target"
  case $target in journal | snapshot) max_len=262144 ;; *) max_len=65536 ;; esac
  log=$("$executable" -max_total_time="$seconds" -rss_limit_mb=2048 -max_len=$max_len -print_final_stats=1 \
    -artifact_prefix="$scratch/crashes/$target/" "$scratch/corpus/$target" "$seeds" 2>&1) || {
    echo "$log" | tail -40
    echo "fuzz.sh: $target: crash; input saved in $scratch/crashes/$target/" >&2
    status=1
    continue
  }
  runs=$(echo "$log" | sed -n 's/^stat::number_of_executed_units: *//p' | tail -1)
  speed=$(echo "$log" | sed -n 's/^stat::average_exec_per_sec: *//p' | tail -1)
  coverage=$(echo "$log" | grep -o 'cov: [0-9]*' | tail -1)
  echo "fuzz: $target: $runs executions in $seconds s ($speed/s, $coverage), no crash"
done
exit $status
