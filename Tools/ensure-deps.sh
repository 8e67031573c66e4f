#!/usr/bin/env bash
# Makes sure the system libraries BlobCache links (liblz4, zlib, found via pkg-config) are here.
# As root it installs what is missing with apt-get; otherwise it prints the exact command.
set -euo pipefail
missing=()
command -v pkg-config >/dev/null 2>&1 || missing+=(pkg-config)
if command -v pkg-config >/dev/null 2>&1; then
  pkg-config --exists liblz4 || missing+=(liblz4-dev)
  pkg-config --exists zlib || missing+=(zlib1g-dev)
else
  missing+=(liblz4-dev zlib1g-dev)
fi
((${#missing[@]} == 0)) && exit 0
if [[ $(id -u) -eq 0 ]] && command -v apt-get >/dev/null 2>&1; then
  echo "ensure-deps: installing ${missing[*]}" >&2
  apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq liblz4-dev zlib1g-dev pkg-config >/dev/null
else
  echo "ensure-deps: missing ${missing[*]}; run as root:" >&2
  echo "  apt-get install -y liblz4-dev zlib1g-dev pkg-config" >&2
  exit 1
fi
