#!/usr/bin/env bash
# Builds the DocC documentation of the BlobCache library with swift-docc-plugin, failing on any
# warning (a broken symbol link, an undocumented parameter…), as CI does.
#
#   Tools/docs.sh                  build into .build/docs (open .build/docs/index.html? it is a
#                                  static site: serve the folder, or use --preview below)
#   Tools/docs.sh --preview        serve it at http://localhost:8080/documentation/blobcache
#
# The plugin is a dependency only while BLOBCACHE_DOCS is set (Package.swift), so packages that
# depend on BlobCache never resolve it. It builds in .build, reusing what `swift build` built.
set -euo pipefail
cd "$(dirname "$0")/.."
Tools/ensure-deps.sh
export BLOBCACHE_DOCS=1
if [[ ${1:-} == --preview ]]; then
  exec swift package --disable-sandbox preview-documentation --target BlobCache
fi
swift package --allow-writing-to-directory .build/docs \
  generate-documentation --target BlobCache --warnings-as-errors \
  --output-path .build/docs --transform-for-static-hosting --hosting-base-path blobcache
echo "docs: .build/docs"
