#!/usr/bin/env python3
"""BlobCache against an earlier commit of itself: W1-W5 in alternation, medians and ratios.

    python3 Benchmarks/against.py d03229a            # 5 runs of W1-W5, this tree vs d03229a
    python3 Benchmarks/against.py d03229a --runs 3 --workloads w2,w5
    python3 Benchmarks/against.py 0a0c4ae --this-harness --workloads w1,w2,dedup2,dedup3

It checks the commit out in a worktree beside the repository (../blobcache-against-COMMIT),
builds both workload runners in release mode, then runs them one after the other, the order
swapped every run (the machine is noisy: only runs interleaved like this compare), and prints
each figure's median per side and this tree's ratio (> 1 is faster). Timings are the runner's
own (Benchmarks/Sources/workload); the corpus is Benchmarks/corpus's (built when missing).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def runner(package):
    subprocess.run(["swift", "build", "-c", "release", "--package-path", package, "--product", "workload"],
                   check=True, stdout=subprocess.DEVNULL)
    path = subprocess.run(["swift", "build", "-c", "release", "--package-path", package, "--show-bin-path"],
                          check=True, capture_output=True, text=True).stdout.strip()
    return os.path.join(path, "workload")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("commit")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--workloads", default="w1,w2,w3,w4,w5")
    parser.add_argument("--corpus", default="/tmp/blobcorpus")
    parser.add_argument("--work", default="/tmp/blobcache-against")
    parser.add_argument("--this-harness", action="store_true",
                        help="build the commit's engine with this tree's workload runner (for workloads it lacks)")
    args = parser.parse_args()
    if not os.path.exists(os.path.join(args.corpus, "w5_trace.tsv")):
        subprocess.run([sys.executable, os.path.join(HERE, "corpus", "make_corpus.py"),
                        "--out", args.corpus], check=True)
    tree = os.path.join(os.path.dirname(ROOT), "blobcache-against-" + args.commit)
    if not os.path.isdir(tree):
        subprocess.run(["git", "-C", ROOT, "worktree", "add", "--detach", tree, args.commit], check=True,
                       stdout=subprocess.DEVNULL)
    if args.this_harness:
        # The same workload runner on both sides: only the engine (Sources/) differs.
        subprocess.run(["rm", "-rf", os.path.join(tree, "Benchmarks", "Sources")], check=True)
        subprocess.run(["cp", "-r", os.path.join(HERE, "Sources"), os.path.join(tree, "Benchmarks", "Sources")], check=True)
    sides = {"before": runner(os.path.join(tree, "Benchmarks")), "this": runner(HERE)}
    samples = {side: {} for side in sides}
    for run in range(args.runs):
        for side in (list(sides) if run % 2 == 0 else list(reversed(sides))):
            out = subprocess.run([sides[side], "--engine", "blobcache", "--corpus", args.corpus,
                                  "--workloads", args.workloads, "--work", args.work],
                                 check=True, capture_output=True, text=True).stdout
            for result in json.loads([line for line in out.splitlines() if line.startswith("{")][-1])["results"]:
                samples[side].setdefault(result["workload"], []).append(result["opsPerSecond"])
            print(f"against: run {run + 1}/{args.runs}: {side}", file=sys.stderr, flush=True)
    print(f"\nMedians of {args.runs} runs, ops/s (min-max); ratio = this / {args.commit}.\n")
    print(f"| workload | {args.commit} | this | ratio |")
    print("|---|---|---|---|")
    for workload, values in samples["this"].items():
        before = samples["before"].get(workload)
        if not before:
            continue
        b, t = statistics.median(before), statistics.median(values)
        print(f"| {workload} | {b:,.0f} ({min(before):,.0f}-{max(before):,.0f}) | "
              f"{t:,.0f} ({min(values):,.0f}-{max(values):,.0f}) | {t / b:.2f} |")


if __name__ == "__main__":
    main()
