#!/usr/bin/env python3
"""Hit ratio and speed of BlobCache's eviction policies, LRU and segmented LRU, side by side.

    python3 Benchmarks/eviction.py [--rounds 9] [--corpus /tmp/blobcorpus] [--json FILE]

Replays three traces through the Swift workload runner (`--workloads eviction`), each under
both policies at caps of 1/64, 1/32 and 1/16 of the corpus bytes (at W5's own cap, a quarter,
the traces evict nothing and every policy scores the same):

- W5: zipf 0.99 over the corpus files, 90% gets, 10% puts (Benchmarks/corpus/README.md);
- W7: W5 with every tenth op a scan of the cold half of the keys (get, put on a miss);
- W8: W5's mix with the popular keys moving by a tenth of the keys every 10,000 ops.

Written by Benchmarks/corpus/make_traces.py (run here when missing). Hit ratios are exact
(the same ops every round); ops/s are the median of the rounds, the policies alternating
within each. Prints a table and, with --json, writes every sample and the table for the
performance document (`render_markdown`).
"""
import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import compare  # noqa: E402

POLICIES = ["lru", "segmentedLRU"]
TRACES = ["W5", "W7", "W8"]
CAPS = [64, 32, 16]
COMMAND = "python3 Benchmarks/eviction.py --rounds 9 --json docs/eviction-performance.json"


def ensure_traces(corpus):
    compare.ensure_corpus(corpus)
    if all(os.path.exists(os.path.join(corpus, f"w{n}_trace.tsv")) for n in (7, 8)):
        return
    made = subprocess.run([sys.executable, os.path.join(HERE, "corpus", "make_traces.py"), "--corpus", corpus])
    if made.returncode != 0:
        raise compare.Failure(f"making the W7 and W8 traces failed (exit {made.returncode}): "
                              f"python3 Benchmarks/corpus/make_traces.py --corpus {corpus}")


def floor_miss_ratio(corpus, trace):
    """The miss ratio of a cache that never evicts, over the trace's measured gets: the misses no
    policy can avoid (a key got before anything put it)."""
    stored, gets, misses = set(), 0, 0
    with open(os.path.join(corpus, f"{trace.lower()}_trace.tsv")) as f:
        lines = f.read().splitlines()
    warmup = next(int(line.split()[-1]) for line in lines if line.startswith("# warmup"))
    for n, line in enumerate(line for line in lines if not line.startswith("#")):
        kind, index = line.split("\t")
        if kind == "P":
            stored.add(index)
            continue
        hit = index in stored
        if kind == "S":
            stored.add(index)
        if n >= warmup:
            gets += 1
            misses += not hit
    return misses / gets


def table_of(rounds):
    """Rows (trace, cap, policy) with the hit ratio and the median ops/s of the rounds."""
    rows = []
    for trace in TRACES:
        for cap in CAPS:
            for policy in POLICIES:
                name = f"{trace}.{policy}.cap{cap}"
                samples = [next(r for r in results if r["workload"] == name) for results in rounds]
                ratios = {round(s["hitRatio"], 6) for s in samples}
                rows.append({"trace": trace, "cap": cap, "policy": policy, "hitRatio": samples[0]["hitRatio"],
                             "hitRatioVaries": len(ratios) > 1,
                             "opsPerSecond": statistics.median(s["opsPerSecond"] for s in samples),
                             "opsPerSecondRange": [min(s["opsPerSecond"] for s in samples),
                                                   max(s["opsPerSecond"] for s in samples)]})
    return rows


def pairs(rows):
    """(trace, cap, lru row, segmented row) for each trace and cap."""
    for trace in TRACES:
        for cap in CAPS:
            lru, seg = (next(r for r in rows if (r["trace"], r["cap"], r["policy"]) == (trace, cap, p)) for p in POLICIES)
            yield trace, cap, lru, seg


def render_markdown(data):
    corpus_mb = data["corpusBytes"] / 1e6
    out = ["## Eviction: LRU and segmented LRU", "",
           "Hit ratio and speed of each `EvictionPolicy` on three traces of the corpus's files, at three caps "
           "(stored bytes, a fraction of the corpus's " f"{corpus_mb:,.0f} MB). W5 is the standard trace (zipf 0.99, "
           "90% gets, 10% puts; a get that misses does not insert); W7 is W5 with every tenth op a sequential scan "
           "of the cold half of the keys (get, and put on a miss); W8 moves the popular keys by a tenth of the keys "
           "every 10,000 ops. 20,000 warm-up ops, then 20,000 measured. Miss ratio = 1 − hit ratio over the "
           "measured gets; its change is segmented LRU's over LRU's (negative: fewer misses). ops/s are medians of "
           f"{data['rounds']} rounds, the policies alternating.", "",
           f"Commit `{data['commit']}`, {data['date']}: `{COMMAND}`", "",
           "The floor is the miss ratio of a cache that never evicts (gets of keys nothing has put yet): no policy "
           "misses less, so the last columns also give the change in the misses above it, the ones a policy decides.", "",
           "| trace | cap | LRU miss ratio | segmented miss ratio | misses | floor | misses above the floor | "
           "LRU ops/s | segmented ops/s | speed |",
           "|---|---|---|---|---|---|---|---|---|---|"]
    for trace, cap, lru, seg in pairs(data["rows"]):
        lru_miss, seg_miss, floor = 1 - lru["hitRatio"], 1 - seg["hitRatio"], data["floors"][trace]
        change = (seg_miss / lru_miss - 1) * 100 if lru_miss else 0.0
        above = ((seg_miss - floor) / (lru_miss - floor) - 1) * 100 if lru_miss > floor else 0.0
        out.append(f"| {trace} | 1/{cap} ({data['corpusBytes'] / cap / 1e6:.1f} MB) | {lru_miss:.3f} | {seg_miss:.3f} | "
                   f"{change:+.1f}% | {floor:.3f} | {above:+.1f}% | {lru['opsPerSecond']:,.0f} | {seg['opsPerSecond']:,.0f} | "
                   f"{seg['opsPerSecond'] / lru['opsPerSecond']:.2f}× |")
    out.append("")
    return "\n".join(out)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--corpus", default="/tmp/blobcorpus")
    parser.add_argument("--work", default="/tmp/blobcache-eviction")
    parser.add_argument("--json", help="write the samples and the table here")
    args = parser.parse_args()
    try:
        compare.check_prerequisites(["blobcache"])
        ensure_traces(args.corpus)
        runner = compare.build_runner()
        rounds = []
        for n in range(args.rounds):
            print(f"eviction: round {n + 1} of {args.rounds}", file=sys.stderr)
            rounds.append(compare.run_swift(runner, "blobcache", args.corpus, ["eviction"], args.work, 1))
    except compare.Failure as failure:
        sys.exit(f"eviction: {failure}")
    with open(os.path.join(args.corpus, "manifest.tsv")) as f:
        corpus_bytes = sum(int(line.split("\t")[1]) for line in f.read().splitlines()[1:])
    commit = subprocess.run(["git", "-C", HERE, "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    data = {"commit": commit, "date": datetime.date.today().isoformat(), "rounds": args.rounds,
            "corpusBytes": corpus_bytes, "floors": {trace: floor_miss_ratio(args.corpus, trace) for trace in TRACES},
            "rows": table_of(rounds), "samples": rounds}
    print(render_markdown(data))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(data, f, indent=1)
            f.write("\n")


if __name__ == "__main__":
    main()
