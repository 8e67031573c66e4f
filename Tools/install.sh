#!/usr/bin/env bash
# Installs the blobcache command: a stripped release build with the Swift runtime and
# FoundationEssentials linked in (--static-swift-stdlib: it runs where no Swift toolchain is), its
# man pages (one per subcommand) and its bash, zsh and fish completions.
#
#   Tools/install.sh                  into /usr/local
#   Tools/install.sh --prefix DIR     into DIR/bin, DIR/share/man/man1 and DIR/share/{bash-completion,zsh,fish}
#
# Builds in .build-install, a scratch folder of its own, so that it neither waits on nor
# invalidates a `swift build` in .build. Safe to run again: every file is overwritten.
set -euo pipefail

usage() { sed -n '2,10s/^# \{0,1\}//p' "$0"; }
misuse() { echo "install.sh: $1 (see --help)" >&2; exit 2; }
prefix=/usr/local
while (($#)); do
  case $1 in
    --prefix) [[ -n ${2:-} ]] || misuse "--prefix takes a folder"; prefix=$2; shift 2 ;;
    --prefix=?*) prefix=${1#--prefix=}; shift ;;
    -h | --help) usage; exit 0 ;;
    *) misuse "unknown option '$1'" ;;
  esac
done
# Made absolute before the cd below, so that a relative --prefix means the caller's folder.
prefix=$(realpath -m -- "$prefix")
cd "$(dirname "$0")/.."
Tools/ensure-deps.sh

scratch=.build-install
build=(swift build --configuration release --static-swift-stdlib --scratch-path "$scratch")
"${build[@]}" --product blobcache
# swift-argument-parser's man page generator, the tool its generate-manual plugin runs. Run
# here rather than through `swift package generate-manual`, which first builds every product
# again without --static-swift-stdlib (`swift package` has no such option): a second full
# release build, in this folder or another.
"${build[@]}" --product generate-manual
bin=$("${build[@]}" --show-bin-path)

# Stripped into a staging copy: the build's own binary keeps its symbols (crash reports, perf)
# and its timestamp, so the next run links nothing anew.
stage=$scratch/stage
rm -rf "$stage" && mkdir -p "$stage/man"
strip -o "$stage/blobcache" "$bin/blobcache"
# A build plan cached from a non-static build of this folder would link the Swift runtime
# dynamically without a word: refuse to install such a binary.
if readelf -d "$stage/blobcache" | grep -E 'NEEDED.*lib(swift|Foundation|dispatch|BlocksRuntime)'; then
  echo "install.sh: $bin/blobcache links the Swift runtime dynamically; rm -rf $scratch and run again" >&2
  exit 1
fi

# One page per subcommand (blobcache.1, blobcache.put.1...), dated by the last commit so that
# installing the same source twice writes the same pages.
manual_date=$(git log -1 --format=%cs 2>/dev/null || date +%F)
"$bin/generate-manual" "$stage/blobcache" --multi-page --date "$manual_date" --output-directory "$stage/man"
# It separates paragraphs with blank lines, which man renders but warns about on every view
# ("mdoc warning: Empty input line"): .Pp is mdoc's paragraph break.
sed -i 's/^$/.Pp/' "$stage"/man/*.1

# Completions come from the binary being installed, so they match its options exactly.
for shell in bash zsh fish; do
  "$stage/blobcache" --generate-completion-script "$shell" >"$stage/completion.$shell"
done

share=$prefix/share
install -D -m 0755 "$stage/blobcache" "$prefix/bin/blobcache"
install -d "$share/man/man1"
install -m 0644 "$stage"/man/*.1 "$share/man/man1/"
install -D -m 0644 "$stage/completion.bash" "$share/bash-completion/completions/blobcache"
install -D -m 0644 "$stage/completion.zsh" "$share/zsh/site-functions/_blobcache"
install -D -m 0644 "$stage/completion.fish" "$share/fish/vendor_completions.d/blobcache.fish"

bytes=$(stat -c %s "$prefix/bin/blobcache")
echo "install.sh: installed into $prefix:"
echo "  bin/blobcache  ($(awk -v b="$bytes" 'BEGIN { printf "%.1f MB, %d bytes, stripped", b / 1e6, b }'))"
for page in "$stage"/man/*.1; do echo "  share/man/man1/${page##*/}"; done
echo "  share/bash-completion/completions/blobcache"
echo "  share/zsh/site-functions/_blobcache"
echo "  share/fish/vendor_completions.d/blobcache.fish"
