#!/usr/bin/env bash
# The CLI beside itself (docs/CLI.md, "Many processes"): 400 `blobcache put` one by one and
# 8 at a time (times, ratio, every value read back, fsck), then 1,400 mixed commands 8 at a
# time (puts, gets of seeded keys, gets racing the puts of their keys, removes of missing keys),
# each checked for its exit code and bytes. Prints one line per check; exits 1 on any failure.
#
#   Tools/cli-concurrency.sh [BLOBCACHE-BINARY]     (default: the debug build, built first)
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ $# -ge 1 ]]; then B=$(realpath "$1"); else swift build --product blobcache >/dev/null; B=$PWD/.build/debug/blobcache; fi
work=$(mktemp -d /tmp/blobcache-cli-concurrency.XXXXXX)
trap 'rm -rf "$work"' EXIT
cd "$work"
mkdir files
python3 -c "
import os, random
random.seed(7)
for i in range(400):
    open('files/f%03d' % i, 'wb').write(os.urandom(random.randint(1, 9000)))"
failed=0
start=$(date +%s.%N)
for f in $(ls files); do "$B" --dir one put "$f" "files/$f" >/dev/null || failed=1; done
middle=$(date +%s.%N)
ls files | xargs -P8 -I{} "$B" --dir eight put {} files/{} >/dev/null || failed=1
end=$(date +%s.%N)
python3 -c "a=$middle-$start; b=$end-$middle; print('400 puts: one by one %.1f s, 8 at a time %.1f s (%.2fx)' % (a, b, b / a))"
bad=0
for f in $(ls files); do "$B" --dir eight get "$f" | cmp -s - "files/$f" || bad=$((bad + 1)); done
echo "values read back wrong: $bad"; [[ $bad == 0 ]] || failed=1
"$B" --dir eight fsck >/dev/null && echo "fsck: clean" || { echo "fsck: errors"; failed=1; }

for i in $(seq 0 49); do "$B" --dir mixed put "seed$i" "files/f$(printf %03d "$i")" >/dev/null; done
cat > op.sh <<OP
#!/usr/bin/env bash
B="$B"; kind=\$1; i=\$2; n=\$(printf %03d \$i)
case \$kind in
  put) "\$B" --dir mixed put k\$i files/f\$n >/dev/null || echo "FAIL put k\$i";;
  get) s=\$(printf %03d \$((i % 50))); "\$B" --dir mixed get seed\$((i % 50)) | cmp -s - files/f\$s || echo "FAIL get seed\$((i % 50))";;
  race) t=\$(mktemp); "\$B" --dir mixed get k\$i > \$t 2>/dev/null; rc=\$?
        if [[ \$rc == 0 ]]; then cmp -s \$t files/f\$n || echo "FAIL race k\$i: wrong bytes"; elif [[ \$rc == 1 ]]; then echo miss; else echo "FAIL race k\$i: exit \$rc"; fi
        rm -f \$t;;
  rm) "\$B" --dir mixed rm missing\$i >/dev/null 2>&1; [[ \$? == 1 ]] || echo "FAIL rm missing\$i";;
esac
OP
chmod +x op.sh
for i in $(seq 50 399); do printf 'put %s\nget %s\nrace %s\nrm %s\n' "$i" "$i" "$i" "$i"; done | shuf > ops
xargs -P8 -L1 ./op.sh < ops > mixed.out 2>&1 || true
echo "mixed: $(wc -l < ops) commands, $(grep -c '^FAIL' mixed.out || true) failures, $(grep -c '^miss' mixed.out || true) racing gets missed"
grep '^FAIL' mixed.out && failed=1
"$B" --dir mixed fsck >/dev/null && echo "mixed fsck: clean" || { echo "mixed fsck: errors"; failed=1; }
exit $failed
