#!/usr/bin/env bash
# The main job: builds the blobcache tool and walks through put, get, ls, stat, fsck and compact
# on a fresh cache directory (DIR, default a new temporary one), printing each command.
set -euo pipefail
cd "$(dirname "$0")/.."
Tools/ensure-deps.sh
swift build -c release --product blobcache >&2
bin=$(swift build -c release --show-bin-path)/blobcache
dir=${1:-$(mktemp -d /tmp/blobcache-demo.XXXXXX)}
run() { printf '\n$ blobcache %s\n' "$*"; "$bin" --dir "$dir" "$@"; }
echo "cache directory: $dir"
printf 'hello, cache\n' > "$dir.greeting.txt"
run put greeting "$dir.greeting.txt"
run get greeting
run put --ttl 3600 config/app.json < Package.swift
run put copy-of-app.json < Package.swift
run import Sources/CLZ4 --prefix shims/lz4/
run ls
run stat
run fsck
run compact
echo
echo "try: $bin --dir $dir --help"
rm -f "$dir.greeting.txt"
