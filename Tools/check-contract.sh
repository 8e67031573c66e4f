#!/usr/bin/env bash
# Builds and runs Tools/contract-client, a package outside the repository that uses the library's
# public contract (its names and their types), against a clean clone of this repository's HEAD.
# Prints `client: ok` on success. Takes a few minutes (a fresh build of the dependencies).
set -euo pipefail
cd "$(dirname "$0")/.."
Tools/ensure-deps.sh
work=$(mktemp -d /tmp/blobcache-contract.XXXXXX)
git clone -q . "$work/blobcache"
mkdir -p "$work/client"
cp -R Tools/contract-client/Sources "$work/client/"
sed -e "s|@BLOBCACHE@|$work/blobcache|" -e "s|@NAME@|blobcache|" Tools/contract-client/Package.swift.in > "$work/client/Package.swift"
cd "$work/client"
swift build
swift run Client
