#!/usr/bin/env python3
"""Import and export of a tree of real files with the blobcache CLI, against `cp -r`.

    python3 Benchmarks/tree.py [--corpus DIR] [--runs 5] [--diskcache] [--against BLOBCACHE] [--work DIR] [--json FILE]

Writes the corpus (Benchmarks/corpus/make_corpus.py; built when missing) out as a tree of files
once (its paths, under /tmp/blobtree), then, in interleaved rounds: `cp -r` of the tree;
`blobcache import TREE` into a fresh cache; `blobcache export OUT` of that cache. The rounds
alternate which goes first, `cp -r` or the CLI (import, then export), so neither always runs
on a machine the other just left busy. With --diskcache, python-diskcache does the same (set
every file, then write every value out). Each timed command starts after a sync, with the page
cache holding the tree (write-back after a command exits is not timed, for either); nothing is
deleted until the last round is done (about 1 GB per round, more with --against or --diskcache),
since files created just after a large deletion are slow on ext4. With
--against, another build of the CLI (e.g. one built at an older commit) imports and exports in
the same rounds, after this one. Prints medians (min–max), the ratios cp / BlobCache (above 1:
BlobCache is faster) for each run and their median, and one JSON line (`render_markdown`
turns it into a table). Builds the release CLI (swift build -c release).
"""
import argparse, json, os, platform, shlex, shutil, statistics, subprocess, sys, tempfile, time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
TOOL = os.path.join(ROOT, ".build", "release", "blobcache")


def materialize(corpus, tree):
    """The corpus as files under `tree` (once; a marker file says it is complete)."""
    marker = os.path.join(tree, ".complete")
    if os.path.exists(marker):
        return
    shutil.rmtree(tree, ignore_errors=True)
    with open(os.path.join(corpus, "manifest.tsv")) as f:
        rows = [line.rstrip("\n").split("\t") for line in f][1:]
    with open(os.path.join(corpus, "concat.bin"), "rb") as f:
        concat = f.read()
    for path, size, offset, _ in rows:
        target = os.path.join(tree, "files", path.lstrip("/"))
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with open(target, "wb") as out:
            out.write(concat[int(offset):int(offset) + int(size)])
    open(marker, "w").close()


def timed(command):
    os.sync()
    start = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def diskcache_round(source, work):
    import diskcache
    files = []
    for folder, _, names in os.walk(source):
        files += [os.path.join(folder, name) for name in names]
    cache_dir, out = os.path.join(work, "dc"), os.path.join(work, "dc-out")
    os.sync()
    start = time.perf_counter()
    cache = diskcache.Cache(cache_dir, size_limit=1 << 40)
    for path in files:
        with open(path, "rb") as f:
            cache.set(os.path.relpath(path, source), f.read())
    cache.close()
    imported = time.perf_counter() - start
    os.sync()
    start = time.perf_counter()
    cache = diskcache.Cache(cache_dir, size_limit=1 << 40)
    for key in cache.iterkeys():
        target = os.path.join(out, key)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with open(target, "wb") as f:
            f.write(cache[key])
    cache.close()
    exported = time.perf_counter() - start
    return imported, exported


def summary(values, cp):
    """Median, min and max of one operation's seconds, and cp's time / its time each run."""
    ratios = [c / v for c, v in zip(cp, values)]
    return {"median": statistics.median(values), "min": min(values), "max": max(values),
            "ratio_each": ratios, "ratio_median": statistics.median(ratios),
            "ratio_min": min(ratios), "ratio_max": max(ratios)}


def render_markdown(data):
    """The JSON line `main` prints, as a Markdown table: each operation's seconds and its
    speed against `cp -r` of the same tree (cp's seconds / its own, above 1 faster), medians
    of the runs with min–max, and the command that measured it.

        print(render_markdown(json.loads(last_line)))
    """
    names = {"cp": "`cp -r`", "import": "`blobcache import`", "export": "`blobcache export`",
             "against.import": "import (--against build)", "against.export": "export (--against build)",
             "diskcache.import": "python-diskcache set", "diskcache.export": "python-diskcache write-out"}
    lines = [f"{data['files']:,} files, {data['bytes'] / 2**20:,.0f} MiB, {data['runs']} alternating runs, "
             f"{data.get('cores', '?')} cores; medians (min–max)", "",
             "| operation | seconds | `cp -r` / this |", "|---|---|---|"]
    for name, stats in data["summary"].items():
        ratio = ("1 (baseline)" if name == "cp" else
                 f"{stats['ratio_median']:.2f}× ({stats['ratio_min']:.2f}–{stats['ratio_max']:.2f})")
        lines.append(f"| {names.get(name, name)} | {stats['median']:.2f} ({stats['min']:.2f}–{stats['max']:.2f}) | {ratio} |")
    lines += ["", f"Command: `{data['command']}`"]
    return "\n".join(lines) + "\n"


def commit():
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", default="/tmp/blobcorpus")
    parser.add_argument("--tree", default="/tmp/blobtree")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--diskcache", action="store_true")
    parser.add_argument("--against", help="another blobcache executable to time in the same rounds")
    parser.add_argument("--json", help="also write the JSON line to this file (docs/export-performance.json for "
                                       "the performance document)")
    parser.add_argument("--work", help="where the copies, caches and exports go (default: the system's temporary "
                        "directory); e.g. /dev/shm to time the programs without the disk's file system")
    options = parser.parse_args()
    subprocess.run(["swift", "build", "-c", "release", "--product", "blobcache"], cwd=ROOT, check=True,
                   stdout=subprocess.DEVNULL)
    if not os.path.exists(os.path.join(options.corpus, "w5_trace.tsv")):
        subprocess.run([sys.executable, os.path.join(HERE, "corpus", "make_corpus.py"), "--out", options.corpus],
                       check=True)
    materialize(options.corpus, options.tree)
    source = os.path.join(options.tree, "files")
    count = sum(len(names) for _, _, names in os.walk(source))
    size = sum(os.path.getsize(os.path.join(d, n)) for d, _, names in os.walk(source) for n in names)
    samples = {"cp": [], "import": [], "export": [], "against.import": [], "against.export": [],
               "diskcache.import": [], "diskcache.export": []}
    # Every round's output is kept until the last round is done: ext4 looks past each inode
    # freed in the last half minute or so (dirty_expire_centisecs) when it allocates one, so a
    # command run just after a large deletion spends most of its time in the allocator, and
    # whichever command came first in a round would pay for the previous round's clean-up.
    with tempfile.TemporaryDirectory(prefix="blobcache-tree-", dir=options.work) as rounds:
        for run in range(options.runs):
            work = os.path.join(rounds, str(run))
            os.mkdir(work)

            def copy():
                samples["cp"].append(timed(["cp", "-r", source, os.path.join(work, "copy")]))

            def blobcache():
                cache = os.path.join(work, "cache")
                samples["import"].append(timed([TOOL, "--dir", cache, "import", source]))
                samples["export"].append(timed([TOOL, "--dir", cache, "export", os.path.join(work, "out")]))

            for step in ((copy, blobcache) if run % 2 == 0 else (blobcache, copy)):
                step()
            if options.against:
                other = os.path.join(work, "against")
                samples["against.import"].append(timed([options.against, "--dir", other, "import", source]))
                samples["against.export"].append(timed([options.against, "--dir", other, "export", os.path.join(work, "against-out")]))
            if options.diskcache:
                imported, exported = diskcache_round(source, work)
                samples["diskcache.import"].append(imported)
                samples["diskcache.export"].append(exported)
            print(f"tree: run {run + 1}/{options.runs} done (export {samples['export'][-1]:.2f} s, "
                  f"cp -r {samples['cp'][-1]:.2f} s)", file=sys.stderr)
    samples = {name: values for name, values in samples.items() if values}
    data = {"benchmark": "tree", "files": count, "bytes": size, "runs": options.runs, "work": options.work,
            "cores": os.cpu_count(), "kernel": platform.release(), "commit": commit(),
            "command": shlex.join(["python3", "Benchmarks/tree.py"] + sys.argv[1:]),
            "seconds": samples, "summary": {name: summary(values, samples["cp"]) for name, values in samples.items()}}
    print()
    print(render_markdown(data))
    for name in ("import", "export"):
        if "against." + name in samples:
            each = ", ".join(f"{t / o:.2f}" for t, o in zip(samples[name], samples["against." + name]))
            print(f"{name}: this build's time / --against's, each run: {each}")
    print(json.dumps(data))
    if options.json:
        with open(options.json, "w") as f:
            json.dump(data, f, indent=1)
            f.write("\n")


if __name__ == "__main__":
    main()
