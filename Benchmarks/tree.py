#!/usr/bin/env python3
"""Import and export of a tree of real files with the blobcache CLI, against `cp -r`.

    python3 Benchmarks/tree.py [--corpus DIR] [--runs 3] [--diskcache] [--against BLOBCACHE]

Writes the corpus (Benchmarks/corpus/make_corpus.py; built when missing) out as a tree of files
once (its paths, under /tmp/blobtree), then, in interleaved rounds: `cp -r` of the tree;
`blobcache import TREE` into a fresh cache; `blobcache export OUT` of that cache. With
--diskcache, python-diskcache does the same (set every file, then write every value out). Each
timed command starts after a sync, with the page cache holding the tree. With --against, another
build of the CLI (e.g. one built at an older commit) imports and exports in the same rounds,
after this one. Prints medians (min–max), the ratios cp / BlobCache (above 1: BlobCache is
faster) for each run, and one JSON line. Builds the release CLI (swift build -c release).
"""
import argparse, json, os, shutil, statistics, subprocess, sys, tempfile, time

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


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", default="/tmp/blobcorpus")
    parser.add_argument("--tree", default="/tmp/blobtree")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--diskcache", action="store_true")
    parser.add_argument("--against", help="another blobcache executable to time in the same rounds")
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
    for run in range(options.runs):
        with tempfile.TemporaryDirectory(prefix="blobcache-tree-") as work:
            samples["cp"].append(timed(["cp", "-r", source, os.path.join(work, "copy")]))
            cache = os.path.join(work, "cache")
            samples["import"].append(timed([TOOL, "--dir", cache, "import", source]))
            samples["export"].append(timed([TOOL, "--dir", cache, "export", os.path.join(work, "out")]))
            if options.against:
                other = os.path.join(work, "against")
                samples["against.import"].append(timed([options.against, "--dir", other, "import", source]))
                samples["against.export"].append(timed([options.against, "--dir", other, "export", os.path.join(work, "against-out")]))
            if options.diskcache:
                imported, exported = diskcache_round(source, work)
                samples["diskcache.import"].append(imported)
                samples["diskcache.export"].append(exported)
        print(f"tree: run {run + 1}/{options.runs} done", file=sys.stderr)
    print(f"\n{count:,} files, {size / 2**20:,.0f} MiB; seconds, medians of {options.runs} runs (min–max)\n")
    print("| operation | seconds | cp -r / this (each run) |")
    print("|---|---|---|")
    for name, values in samples.items():
        if not values:
            continue
        each = ", ".join(f"{c / v:.2f}" for c, v in zip(samples["cp"], values))
        print(f"| {name} | {statistics.median(values):.2f} ({min(values):.2f}–{max(values):.2f}) | "
              f"{statistics.median(samples['cp']) / statistics.median(values):.2f}× ({each}) |")
    for name in ("import", "export"):
        if samples["against." + name]:
            each = ", ".join(f"{t / o:.2f}" for t, o in zip(samples[name], samples["against." + name]))
            print(f"\n{name}: this build's time / --against's, each run: {each}")
    print(json.dumps({"files": count, "bytes": size, "seconds": samples}))


if __name__ == "__main__":
    main()
