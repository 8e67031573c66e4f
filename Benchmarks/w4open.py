#!/usr/bin/env python3
"""W4's cold open + get, this build against another, alternated in fresh processes.

    python3 Benchmarks/w4open.py OTHER-WORKLOAD OTHER-W4-DIR [--warm] [--rounds 3] [--runs 9]

Each side opens its own kept W4 cache (`workload --workloads w4 --keep-work --work DIR`, made by
that side's build: a snapshot one build writes may not be one the other uses) and gets W4's
middle key (the MD5 hex of the 4 KiB at 50,000 x 4,096 of synth_4k.bin). Every round runs
`workload w4-open` RUNS times per side, the order swapped each round, and keeps each side's
median; it prints the rounds, their medians and this/other per round. --warm passes --warm
(the Swift runtime warmed by another open first). --this-dir and --key point both sides at any
other kept cache and key (say the scale workload's 10 M-entry cache and its middle key, or W4's
cache after a few more sets), each side still with its own copy.
"""
import argparse
import hashlib
import os
import statistics
import subprocess

HERE = os.path.dirname(os.path.abspath(__file__))

parser = argparse.ArgumentParser()
parser.add_argument("other_workload")
parser.add_argument("other_dir")
parser.add_argument("--this-dir", default="/tmp/wk/W4")
parser.add_argument("--this-workload", default=os.path.join(HERE, ".build", "release", "workload"))
parser.add_argument("--corpus", default="/tmp/blobcorpus")
parser.add_argument("--key", help="the key to get (default: W4's middle key)")
parser.add_argument("--warm", action="store_true")
parser.add_argument("--rounds", type=int, default=3)
parser.add_argument("--runs", type=int, default=9)
args = parser.parse_args()

key = args.key
if key is None:
    with open(os.path.join(args.corpus, "synth_4k.bin"), "rb") as f:
        f.seek(50_000 * 4096)
        key = hashlib.md5(f.read(4096)).hexdigest()
sides = {"this": (args.this_workload, args.this_dir), "other": (args.other_workload, args.other_dir)}
medians = {side: [] for side in sides}
for round_number in range(args.rounds):
    for side in (list(sides) if round_number % 2 == 0 else list(reversed(sides))):
        workload, directory = sides[side]
        command = [workload, "w4-open", directory, key] + (["--warm"] if args.warm else [])
        seconds = [float(subprocess.run(command, capture_output=True, text=True, check=True).stdout.split()[0])
                   for _ in range(args.runs)]
        medians[side].append(statistics.median(seconds))
for side, values in medians.items():
    print(f"{side:5} " + " ".join(f"{v * 1e3:.2f} ms" for v in values) + f"   median {statistics.median(values) * 1e3:.2f} ms")
print("this/other per round: " + " ".join(f"{a / b:.3f}" for a, b in zip(medians["this"], medians["other"])))
