#!/usr/bin/env python3
"""Writes the eviction traces W7 and W8 beside a corpus that make_corpus.py built.

    python3 Benchmarks/corpus/make_traces.py [--corpus /tmp/blobcorpus]

Both use W5's key popularity (zipf 0.99 over the manifest's files, 90% gets, 10% puts, a miss
does not insert) and its length (20,000 warm-up ops, then 20,000 measured), so that the three
differ only in what they add:

- w7_trace.tsv, W5 with a scan: every tenth op is `S i`, the next file of a sequential scan
  over the least popular half of the keys (in manifest order, wrapping): a get, and a put when
  it misses, as a client filling a cache from a batch job would. A scan's keys are each used
  once per pass, so a policy that keeps them keeps nothing useful.
- w8_trace.tsv, a shifting working set: every 10,000 ops the popularity ranks move by a tenth
  of the keys, so the files that were hot go cold and others take their place.

The same corpus and arguments give the same traces (seeded). Their lines have W5's format
(Benchmarks/corpus/README.md), plus `S i` in W7.
"""
import argparse
import bisect
import os
import random


def zipf_sampler(n, s, rng):
    """A function returning a popularity rank in [0, n), rank 0 the most popular."""
    cumulative, total = [], 0.0
    for rank in range(n):
        total += 1.0 / (rank + 1) ** s
        cumulative.append(total)
    return lambda: min(bisect.bisect_left(cumulative, rng.random() * total), n - 1)


def write(path, header, warmup, ops):
    lines = [header, f"# warmup\t{warmup}", f"# ops\t{len(ops) - warmup}"] + ops
    with open(path + ".tmp", "w") as f:
        f.write("\n".join(lines) + "\n")
    os.replace(path + ".tmp", path)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--corpus", default="/tmp/blobcorpus", help="the corpus folder (default %(default)s)")
    p.add_argument("--warmup", type=int, default=20000)
    p.add_argument("--ops", type=int, default=20000)
    p.add_argument("--seed", type=int, default=20240601)
    args = p.parse_args()
    with open(os.path.join(args.corpus, "manifest.tsv")) as f:
        n = sum(1 for _ in f) - 1
    total = args.warmup + args.ops

    rng = random.Random(args.seed + 7)
    popularity = list(range(n))
    rng.shuffle(popularity)            # rank -> manifest row
    sample = zipf_sampler(n, 0.99, rng)
    cold = sorted(popularity[n // 2:])  # the least popular half, in manifest order
    ops, scanned = [], 0
    for i in range(total):
        if i % 10 == 9:
            ops.append(f"S\t{cold[scanned % len(cold)]}")
            scanned += 1
        else:
            ops.append(f"{'G' if rng.random() < 0.9 else 'P'}\t{popularity[sample()]}")
    write(os.path.join(args.corpus, "w7_trace.tsv"),
          f"# w7 trace: W5 (zipf_s=0.99 get_frac=0.9) with every 10th op a scan of the cold half; keys={n} seed={args.seed + 7}",
          args.warmup, ops)

    rng = random.Random(args.seed + 8)
    popularity = list(range(n))
    rng.shuffle(popularity)
    sample = zipf_sampler(n, 0.99, rng)
    shift, phase_ops = n // 10, 10000
    ops = []
    for i in range(total):
        rank = (sample() + (i // phase_ops) * shift) % n
        ops.append(f"{'G' if rng.random() < 0.9 else 'P'}\t{popularity[rank]}")
    write(os.path.join(args.corpus, "w8_trace.tsv"),
          f"# w8 trace: zipf_s=0.99 get_frac=0.9, ranks moving by {shift} keys every {phase_ops} ops; keys={n} seed={args.seed + 8}",
          args.warmup, ops)
    print(f"wrote {args.corpus}/w7_trace.tsv and w8_trace.tsv ({total} ops each)")


if __name__ == "__main__":
    main()
