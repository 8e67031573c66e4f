#!/usr/bin/env python3
"""Side-by-side throughput of BlobCache, python-diskcache and a raw-filesystem baseline.

Runs the standard workloads W1-W5 (Benchmarks/corpus/README.md) on the same corpus, in
alternation (the engine order rotates every run), several times, and prints each figure as
the median of the runs with min-max, and BlobCache's ratio to the others: of the medians, and
in each run. A figure whose min-max spread exceeds 30% of its median is flagged (⚑): quote it
only with that warning. Every engine syncs the file system before each timed phase and after
each warm-up (settle), so that no phase pays for the dirty pages of the one before it.

    python3 Benchmarks/compare.py                 # 3 runs of W1-W5, W3 per codec, 2-thread gets
    python3 Benchmarks/compare.py --runs 5 --workloads w2,w3
    python3 Benchmarks/compare.py --json out.json # also write every sample
    python3 Benchmarks/compare.py --compression fastReads --workloads w1,w3
                                                  # BlobCache under another compression preset
    python3 Benchmarks/compare.py --from-json out.json --chart /tmp/chart.svg
                                                  # table and chart again from saved samples

`python3 Benchmarks/performance.py` runs it for docs/PERFORMANCE.md (and its chart and JSON).

It installs `diskcache` with pip when missing, builds the Swift workload runner in release mode,
and builds the corpus (Benchmarks/corpus/make_corpus.py) when missing; a missing prerequisite
(swift not on PATH, pip failing, a failed build) stops it with a one-line message.

- BlobCache and the raw baseline run in the Swift runner (Benchmarks/Sources/workload): the raw
  baseline writes each value to a temporary file and renames it into a two-level sharded tree
  named by the key, and reads it back with open+read (no hashing, no compression, no index).
- diskcache runs here, in CPython: Cache(directory) with set/get of bytes values (SQLite for
  values under 32 KB, files above), LRU eviction with size_limit for W5.
W4 (open a 100,000-entry cache and get one key) is timed inside a fresh process for both caches.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
MAKE_CORPUS = os.path.join(HERE, "corpus", "make_corpus.py")


class Failure(Exception):
    """A missing prerequisite or a failed step: main() prints it as one line and exits 1."""


def last_line(text):
    lines = [line.strip() for line in (text or "").splitlines() if line.strip()]
    return lines[-1] if lines else "no output"


def error_line(text):
    """The first line that says error (pip's last line is often only a hint), else the last."""
    lines = [line.strip() for line in (text or "").splitlines() if "error" in line.lower()]
    return lines[0] if lines else last_line(text)


def check_prerequisites(engines):
    """What can be checked in a moment, before minutes go into building the corpus."""
    if {"blobcache", "rawfs"} & set(engines) and shutil.which("swift") is None:
        raise Failure("swift is not on PATH: install a Swift toolchain (6.1 or later) and put its "
                      "usr/bin on PATH, or run with --engines diskcache")


def ensure_diskcache():
    try:
        import diskcache  # noqa: F401
        return
    except ImportError:
        pass
    print("compare: installing diskcache with pip", file=sys.stderr)
    pip = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "diskcache"], capture_output=True, text=True)
    if pip.returncode != 0:
        raise Failure(f"pip could not install diskcache (exit {pip.returncode}: {error_line(pip.stderr or pip.stdout)}); "
                      f"install it for {sys.executable} yourself (python3 -m pip install diskcache) and run again")
    import importlib
    importlib.invalidate_caches()
    try:
        import diskcache  # noqa: F401,F811
    except ImportError:
        raise Failure(f"pip installed diskcache but {sys.executable} cannot import it; "
                      "install it for this interpreter (python3 -m pip install diskcache) and run again") from None


def ensure_corpus(corpus):
    if os.path.exists(os.path.join(corpus, "w5_trace.tsv")):
        return
    print(f"compare: building the corpus in {corpus} (a few minutes, once)", file=sys.stderr)
    built = subprocess.run([sys.executable, MAKE_CORPUS, "--out", corpus])
    if built.returncode != 0:
        raise Failure(f"building the corpus in {corpus} failed (exit {built.returncode}, see above): "
                      f"python3 Benchmarks/corpus/make_corpus.py --out {corpus}")


def build_runner():
    command = ["swift", "build", "-c", "release", "--package-path", HERE, "--product", "workload"]
    print("compare: building the workload runner (swift build -c release; minutes the first time)", file=sys.stderr)
    try:
        built = subprocess.run(command, capture_output=True, text=True)
    except FileNotFoundError:
        raise Failure("swift is not on PATH: install a Swift toolchain (6.1 or later) and put its usr/bin on PATH") from None
    if built.returncode != 0:
        errors = [line for line in (built.stdout + built.stderr).splitlines() if "error:" in line]
        for line in errors[:10]:
            print(line, file=sys.stderr)
        raise Failure(f"building the workload runner failed (exit {built.returncode}): "
                      + (errors[0].strip() if errors else last_line(built.stderr or built.stdout)))
    path = subprocess.run(command[:-2] + ["--show-bin-path"], capture_output=True, text=True)
    runner = os.path.join(path.stdout.strip(), "workload")
    if path.returncode != 0 or not os.path.exists(runner):
        raise Failure(f"swift build --show-bin-path did not name the workload runner ({last_line(path.stderr)})")
    return runner


# ---------------------------------------------------------------- corpus access (diskcache side)

class Corpus:
    def __init__(self, directory):
        self.directory = directory
        with open(os.path.join(directory, "manifest.tsv")) as f:
            rows = [line.rstrip("\n").split("\t") for line in f][1:]
        self.files = [(path, int(offset), int(size)) for path, size, offset, _ in rows]
        with open(os.path.join(directory, "concat.bin"), "rb") as f:
            self.concat = f.read()

    def value(self, index):
        _, offset, size = self.files[index]
        return self.concat[offset:offset + size]

    def trace(self):
        warmup, ops = 0, []
        with open(os.path.join(self.directory, "w5_trace.tsv")) as f:
            for line in f:
                if line.startswith("#"):
                    fields = line[1:].split()
                    if fields and fields[0] == "warmup":
                        warmup = int(fields[-1])
                    continue
                kind, index = line.rstrip("\n").split("\t")
                ops.append((kind == "P", int(index)))
        return warmup, ops


def md5_hex(data):
    import hashlib
    return hashlib.md5(data).hexdigest()


def measure(name, ops, seconds, nbytes, hit_ratio=None):
    result = {"workload": name, "ops": ops, "seconds": seconds, "bytes": nbytes,
              "opsPerSecond": ops / seconds, "megabytesPerSecond": nbytes / 1e6 / seconds}
    if hit_ratio is not None:
        result["hitRatio"] = hit_ratio
    return result


def settle():
    """Flushes every dirty page before a timed phase, so that no phase pays for the writes of
    the phase (or the engine) before it. The Swift runner does the same (settle())."""
    os.sync()


def diskcache_put_get(name, work, keys, values):
    import diskcache
    directory = os.path.join(work, name)
    shutil.rmtree(directory, ignore_errors=True)
    cache = diskcache.Cache(directory, size_limit=1 << 40)
    settle()
    start = time.perf_counter()
    for key, value in zip(keys, values):
        cache.set(key, value)
    put = time.perf_counter() - start
    total = sum(len(v) for v in values)
    settle()
    start = time.perf_counter()
    read = 0
    for key in keys:
        read += len(cache.get(key))
    get = time.perf_counter() - start
    cache.close()
    assert read == total, f"{name}: read {read} of {total}"
    shutil.rmtree(directory, ignore_errors=True)
    return [measure(f"{name}.put", len(keys), put, total), measure(f"{name}.get", len(keys), get, read)]


W6_COUNT = 20_000


_W6_TEXT = bytes(97 + (b >> 4) for b in range(256))


def w6_value(process, step):
    """A 4 KiB value no other put stores, like the Swift runner's w6Value: 2 KiB of 16
    letters (compressible), 2 KiB of random bytes."""
    return os.urandom(2048).translate(_W6_TEXT) + os.urandom(2048)


def _w6_child(directory, index, count, ready, go, done):
    import diskcache
    cache = diskcache.Cache(directory, size_limit=1 << 40)
    values = [w6_value(index, step) for step in range(0, count, 2)]   # made before the clock starts
    state = ((index + 1) * 0x9E3779B97F4A7C15) & 0xFFFFFFFFFFFFFFFF
    ready.put(1)
    go.wait()
    for step in range(count):
        state = (state * 6364136223846793005 + 1442695040888963407) & 0xFFFFFFFFFFFFFFFF
        key = f"shared-{(state >> 33) % 256}" if step % 4 < 2 else f"own-{index}-{(state >> 33) % 1024}"
        if step % 2 == 0:
            cache.set(key, values[step // 2])
        else:
            cache.get(key)
    done.put(1)
    cache.close()


def diskcache_w6(work):
    """W6 for diskcache: 1, then 4 processes on one Cache (SQLite lets them), the same mix."""
    import diskcache
    import multiprocessing
    results = []
    for processes in (1, 4):
        directory = os.path.join(work, f"W6-{processes}")
        shutil.rmtree(directory, ignore_errors=True)
        seed = diskcache.Cache(directory, size_limit=1 << 40)
        for key in range(256):
            seed.set(f"shared-{key}", w6_value(99, key))
        seed.close()
        ready, done, go = multiprocessing.Queue(), multiprocessing.Queue(), multiprocessing.Event()
        children = [multiprocessing.Process(target=_w6_child, args=(directory, i, W6_COUNT, ready, go, done))
                    for i in range(processes)]
        for child in children:
            child.start()
        for _ in children:
            ready.get()
        settle()
        start = time.perf_counter()
        go.set()
        for _ in children:
            done.get()
        seconds = time.perf_counter() - start
        for child in children:
            child.join()
        results.append(measure(f"W6.{processes}p", processes * W6_COUNT, seconds, processes * W6_COUNT * 4096))
        shutil.rmtree(directory, ignore_errors=True)
    return results


def run_diskcache(corpus_dir, workloads, work, w4_runs):
    import diskcache
    corpus = Corpus(corpus_dir) if {"w1", "w5"} & set(workloads) else None
    results = []
    for workload in workloads:
        if workload == "w6":
            results += diskcache_w6(work)
        elif workload == "w1":
            keys = [path for path, _, _ in corpus.files]
            values = [corpus.value(i) for i in range(len(corpus.files))]
            results += diskcache_put_get("W1", work, keys, values)
        elif workload in ("w2", "w3"):
            name, size, count = ("synth_4k.bin", 4096, 10_000) if workload == "w2" else ("synth_1m.bin", 1 << 20, 1000)
            blobs = _blobs(corpus_dir, name, size, count)
            results += diskcache_put_get(workload.upper(), work, [md5_hex(b) for b in blobs], blobs)
        elif workload == "w4":
            directory = os.path.join(work, "W4")
            shutil.rmtree(directory, ignore_errors=True)
            blobs = _blobs(corpus_dir, "synth_4k.bin", 4096, 100_000)
            keys = [md5_hex(b) for b in blobs]
            cache = diskcache.Cache(directory, size_limit=1 << 40)
            for key, blob in zip(keys, blobs):
                cache.set(key, blob)
            cache.close()
            settle()
            samples = []
            for _ in range(w4_runs):
                opened = subprocess.run([sys.executable, __file__, "--diskcache-w4-open", directory, keys[len(keys) // 2]],
                                        capture_output=True, text=True)
                if opened.returncode != 0:
                    raise Failure(f"diskcache's W4 open failed (exit {opened.returncode}): {error_line(opened.stderr)}")
                samples.append(float(opened.stdout.strip()))
            shutil.rmtree(directory, ignore_errors=True)
            results.append(measure("W4.open+get", 1, statistics.median(samples), 4096))
        elif workload == "w5":
            results.append(diskcache_w5(corpus, work, cap=sum(size for _, _, size in corpus.files) // 4))
    return results


def diskcache_w5(corpus, work, cap=None, name="W5"):
    """W5's trace replayed through diskcache, LRU under `cap` bytes (`None`: no cap, no eviction)."""
    import diskcache
    directory = os.path.join(work, name)
    shutil.rmtree(directory, ignore_errors=True)
    cache = diskcache.Cache(directory, size_limit=cap or 1 << 40, eviction_policy="least-recently-used")
    warmup, ops = corpus.trace()
    hits = gets = nbytes = 0
    settle()
    start = time.perf_counter()
    for n, (put, index) in enumerate(ops):
        if n == warmup:
            settle()
            start, hits, gets, nbytes = time.perf_counter(), 0, 0, 0
        path = corpus.files[index][0]
        if put:
            value = corpus.value(index)
            cache.set(path, value)
            nbytes += len(value)
        else:
            gets += 1
            value = cache.get(path)
            if value is not None:
                hits += 1
                nbytes += len(value)
    seconds = time.perf_counter() - start
    cache.close()
    shutil.rmtree(directory, ignore_errors=True)
    return measure(name, len(ops) - warmup, seconds, nbytes, hits / max(1, gets))


def _blobs(corpus_dir, name, size, count):
    with open(os.path.join(corpus_dir, name), "rb") as f:
        data = f.read(size * count)
    return [data[i * size:(i + 1) * size] for i in range(len(data) // size)]


def diskcache_w4_open(directory, key):
    import diskcache
    start = time.perf_counter()
    cache = diskcache.Cache(directory, size_limit=1 << 40)
    value = cache.get(key)
    seconds = time.perf_counter() - start
    assert value is not None and len(value) == 4096
    print(seconds)


def run_swift(runner, engine, corpus, workloads, work, w4_runs, compression=None):
    preset = ["--compression", compression] if compression and engine == "blobcache" else []
    ran = subprocess.run([runner, "--engine", engine, "--corpus", corpus, "--workloads", ",".join(workloads),
                          "--w4-runs", str(w4_runs), "--work", os.path.join(work, engine)] + preset,
                         capture_output=True, text=True)
    lines = [l for l in ran.stdout.splitlines() if l.startswith("{")]
    if ran.returncode != 0 or not lines:
        raise Failure(f"the workload runner failed on {engine} (exit {ran.returncode}): {last_line(ran.stderr or ran.stdout)}")
    return json.loads(lines[-1])["results"]


# ---------------------------------------------------------------- report

METRICS = [("W1.put", "opsPerSecond"), ("W1.put", "megabytesPerSecond"), ("W1.get", "opsPerSecond"),
           ("W1.get", "megabytesPerSecond"), ("W2.put", "opsPerSecond"), ("W2.get", "opsPerSecond"),
           ("W3.put", "opsPerSecond"), ("W3.get", "opsPerSecond"), ("W3.get", "megabytesPerSecond"),
           ("W4.open+get", "seconds"), ("W4.open+get", "indexBytesPerEntry"), ("W5", "opsPerSecond"),
           ("W5", "hitRatio"), ("W1.fsck", "megabytesPerSecond"), ("W6.1p", "opsPerSecond"), ("W6.4p", "opsPerSecond")]
UNITS = {"opsPerSecond": "ops/s", "megabytesPerSecond": "MB/s", "seconds": "ms", "hitRatio": "hit ratio",
         "indexBytesPerEntry": "index bytes/entry", "storedBytes": "stored bytes"}
# BlobCache alone: W3 once per codec (w3codecs) and W2 gets from one and two threads (readers).
CODECS = ["none", "lz4", "zlib-1"]
EXTRA = [(f"W3.{codec}.{phase}", metric) for codec in CODECS
         for phase, metric in (("put", "opsPerSecond"), ("put", "storedBytes"), ("get", "megabytesPerSecond"))] \
    + [("W2.get.1t", "opsPerSecond"), ("W2.get.2t", "opsPerSecond")]


def summarize(samples):
    """samples: engine -> list of result lists. Returns engine -> (workload, metric) -> values."""
    table = {}
    for engine, runs in samples.items():
        for results in runs:
            for result in results:
                for workload, metric in METRICS + EXTRA:
                    if result["workload"] == workload and metric in result:
                        value = result[metric] * (1000 if metric == "seconds" else 1)
                        table.setdefault(engine, {}).setdefault((workload, metric), []).append(value)
    return table


SPREAD_LIMIT = 0.30


def flagged(values):
    """Whether a figure's min–max spread exceeds 30% of its median (too noisy to quote alone)."""
    if not values or len(values) < 2:
        return False
    median = statistics.median(values)
    return median > 0 and (max(values) - min(values)) / median > SPREAD_LIMIT


def fmt(values):
    if not values:
        return "—"
    median = statistics.median(values)
    digits = 3 if median < 10 else (1 if median < 1000 else 0)
    spec = f"{{:,.{digits}f}}"
    flag = " ⚑" if flagged(values) else ""
    return f"{spec.format(median)} ({spec.format(min(values))}–{spec.format(max(values))}){flag}"


def print_extra(table):
    """W3 per codec (stored bytes against read speed) and W2 gets on one and two threads."""
    bc = table.get("blobcache", {})
    median = lambda values: statistics.median(values) if values else None
    if any(bc.get((f"W3.{codec}.get", "megabytesPerSecond")) for codec in CODECS):
        print("\nW3 (1,000 × 1 MiB) per codec, BlobCache; the get ratios are against the other engines' W3 get:\n")
        print("| codec | stored MiB | put ops/s | get MB/s | get vs diskcache | get vs raw fs |")
        print("|---|---|---|---|---|---|")
        for codec in CODECS:
            gets = bc.get((f"W3.{codec}.get", "megabytesPerSecond"))
            if not gets:
                continue
            stored = median(bc.get((f"W3.{codec}.put", "storedBytes")))
            vs = [ratio(gets, table.get(e, {}).get(("W3.get", "megabytesPerSecond")), "megabytesPerSecond")
                  for e in ("diskcache", "rawfs")]
            print(f"| {codec} | {stored / 2**20:,.0f} | {fmt(bc.get((f'W3.{codec}.put', 'opsPerSecond')))} | {fmt(gets)} | "
                  + " | ".join(vs) + " |")
    one, two = bc.get(("W2.get.1t", "opsPerSecond")), bc.get(("W2.get.2t", "opsPerSecond"))
    if one and two:
        print("\nW2 get (10,000 × 4 KiB, memory tier off), one thread against two on one cache:\n")
        print("| one thread, gets/s | two threads, gets/s | two / one (each run) |")
        print("|---|---|---|")
        print(f"| {fmt(one)} | {fmt(two)} | {median(two) / median(one):.2f}× ({', '.join(f'{b / a:.2f}' for a, b in zip(one, two))}) |")


def run_ratios(a, b, metric):
    """BlobCache's ratio in each run (runs are paired: same run, engines in rotation)."""
    if not a or not b or len(a) != len(b):
        return "—"
    pairs = [(y / x if metric == "seconds" else x / y) for x, y in zip(a, b)]
    return ", ".join(f"{r:.2f}" for r in pairs)


def ratio(a, b, metric):
    if not a or not b:
        return "—"
    x, y = statistics.median(a), statistics.median(b)
    if metric == "seconds":       # lower is better: how many times faster
        x, y = y, x
    return f"{x / y:.2f}×"


def w5_ceiling(corpus_dir):
    """The W5 hit ratio of a cache that never evicts: gets of keys the trace has not yet put miss."""
    warmup, ops = _trace(corpus_dir)
    present, hits, gets = set(), 0, 0
    for n, (put, index) in enumerate(ops):
        if n == warmup:
            hits = gets = 0
        if put:
            present.add(index)
        else:
            gets += 1
            hits += index in present
    return hits / max(1, gets)


def _trace(corpus_dir):
    corpus = Corpus.__new__(Corpus)
    corpus.directory = corpus_dir
    return corpus.trace()


def print_table(table, runs):
    engines = ["blobcache", "diskcache", "rawfs"]
    print(f"\nMedians of {runs} runs (min–max); ratios are BlobCache's advantage (>1 is better).\n")
    print("| workload | metric | BlobCache | python-diskcache | raw fs (temp+rename) | vs diskcache | vs raw fs |")
    print("|---|---|---|---|---|---|---|")
    for workload, metric in METRICS:
        cells = [fmt(table.get(e, {}).get((workload, metric))) for e in engines]
        if all(c == "—" for c in cells):
            continue
        bc = table.get("blobcache", {}).get((workload, metric))
        vs = [ratio(bc, table.get(e, {}).get((workload, metric)), metric) if metric in ("opsPerSecond", "megabytesPerSecond", "seconds") else "—"
              for e in engines[1:]]
        print(f"| {workload} | {UNITS[metric]} | " + " | ".join(cells) + " | " + " | ".join(vs) + " |")
    print("\nBlobCache's ratio in each run (run 1, 2, …):\n")
    print("| workload | metric | vs diskcache | vs raw fs |")
    print("|---|---|---|---|")
    for workload, metric in METRICS:
        if metric not in ("opsPerSecond", "megabytesPerSecond", "seconds"):
            continue
        bc = table.get("blobcache", {}).get((workload, metric))
        cells = [run_ratios(bc, table.get(e, {}).get((workload, metric)), metric) for e in engines[1:]]
        if bc and any(c != "—" for c in cells):
            print(f"| {workload} | {UNITS[metric]} | " + " | ".join(cells) + " |")
    print_extra(table)
    noisy = [f"{engine} {workload} {UNITS[metric]}" for engine in engines for workload, metric in METRICS + EXTRA
             if flagged(table.get(engine, {}).get((workload, metric)))]
    if noisy:
        print(f"\n⚑ {len(noisy)} figure(s) spread (max − min) over {SPREAD_LIMIT:.0%} of their median: "
              + "; ".join(noisy) + ". Quote them only with this warning, or run again on a quieter machine.")
    else:
        print(f"\nNo figure spreads (max − min) over {SPREAD_LIMIT:.0%} of its median.")

CHART_ROWS = [("W1.put", "opsPerSecond", "W1 put"), ("W1.get", "opsPerSecond", "W1 get"),
              ("W2.put", "opsPerSecond", "W2 put"), ("W2.get", "opsPerSecond", "W2 get"),
              ("W3.put", "opsPerSecond", "W3 put"), ("W3.get", "opsPerSecond", "W3 get"),
              ("W4.open+get", "seconds", "W4 open+get"), ("W5", "opsPerSecond", "W5 ops")]
CHART_ENGINES = [("blobcache", "BlobCache", "#2b6cb0"), ("rawfs", "raw files (temp+rename)", "#dd6b20")]


def write_chart(table, runs, path):
    with open(path, "w") as f:
        f.write(chart_svg(table, runs))


def chart_svg(table, runs):
    """An SVG bar chart: each engine's median speed per workload as a multiple of diskcache's
    (log scale; for W4, whose metric is a time, the inverse)."""
    import math
    ticks = [0.125, 0.25, 0.5, 1, 2, 4, 8, 16]
    left, right, top, bar, gap = 110, 40, 50, 9, 12
    width = 720
    span = width - left - right
    lo, hi = math.log2(ticks[0]), math.log2(ticks[-1])

    def x(value):
        return left + (math.log2(min(max(value, ticks[0]), ticks[-1])) - lo) / (hi - lo) * span

    rows = []
    for workload, metric, label in CHART_ROWS:
        base = table.get("diskcache", {}).get((workload, metric))
        if not base:
            continue
        values = []
        for engine, _, _ in CHART_ENGINES:
            samples = table.get(engine, {}).get((workload, metric))
            if samples:
                v, b = statistics.median(samples), statistics.median(base)
                values.append((engine, b / v if metric == "seconds" else v / b))
        rows.append((label, values))
    height = top + len(rows) * (2 * bar + gap) + 50
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'font-family="sans-serif" font-size="12">',
           f'<rect width="{width}" height="{height}" fill="white"/>',
           f'<text x="{left}" y="20" font-size="14" font-weight="bold">Speed as a multiple of python-diskcache '
           f'({f"medians of {runs} runs" if runs != 1 else "one run"}, log scale)</text>']
    for tick in ticks:
        tx = x(tick)
        out.append(f'<line x1="{tx:.1f}" y1="{top - 8}" x2="{tx:.1f}" y2="{height - 40}" '
                   f'stroke="{"#333" if tick == 1 else "#ddd"}"/>')
        out.append(f'<text x="{tx:.1f}" y="{height - 26}" text-anchor="middle">{tick:g}×</text>')
    y = top
    colors = {engine: color for engine, _, color in CHART_ENGINES}
    for label, values in rows:
        out.append(f'<text x="{left - 8}" y="{y + bar + 4:.1f}" text-anchor="end">{label}</text>')
        for n, (engine, value) in enumerate(values):
            x0, x1 = sorted((x(1), x(value)))
            out.append(f'<rect x="{x0:.1f}" y="{y + n * bar}" width="{max(x1 - x0, 1):.1f}" height="{bar - 1}" '
                       f'fill="{colors[engine]}"><title>{engine}: {value:.2f}×</title></rect>')
        y += 2 * bar + gap
    lx = left
    for _, name, color in CHART_ENGINES:
        out.append(f'<rect x="{lx}" y="{height - 16}" width="10" height="10" fill="{color}"/>')
        out.append(f'<text x="{lx + 14}" y="{height - 7}">{name}</text>')
        lx += 24 + 7 * len(name)
    out.append(f'<text x="{lx}" y="{height - 7}">python-diskcache: the 1× line</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def load_samples(path):
    """The samples a --json run saved: engine -> runs -> results. Also reads the document
    Benchmarks/performance.py keeps (docs/performance.json), which holds them under "samples"."""
    with open(path) as f:
        data = json.load(f)
    return data["samples"] if "samples" in data else data


def main():
    try:
        run()
    except Failure as failure:
        sys.exit(f"compare: {failure}")
    except OSError as error:
        sys.exit(f"compare: {error}")


def run():
    if len(sys.argv) == 4 and sys.argv[1] == "--diskcache-w4-open":
        diskcache_w4_open(sys.argv[2], sys.argv[3])
        return
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--corpus", default="/tmp/blobcorpus")
    parser.add_argument("--workloads", default="w1,w2,w3,w4,w5,w3codecs,readers")
    parser.add_argument("--engines", default="blobcache,diskcache,rawfs")
    parser.add_argument("--w4-runs", type=int, default=5, help="fresh-process opens per W4 sample")
    parser.add_argument("--json", help="write every sample to this file")
    parser.add_argument("--from-json", help="print the table (and --chart) from samples a --json run saved; runs nothing")
    parser.add_argument("--chart", help="also draw the comparison as an SVG bar chart to this file")
    parser.add_argument("--compression", help="BlobCache's compression preset (adaptive, balanced, fastReads, smallest, "
                                              "off); default: the library's default, adaptive")
    args = parser.parse_args()
    if args.from_json:
        samples = load_samples(args.from_json)
        runs = max(len(v) for v in samples.values())
        table = summarize(samples)
        print_table(table, runs)
        if args.chart:
            write_chart(table, runs, args.chart)
        return
    workloads = args.workloads.lower().split(",")
    engines = args.engines.split(",")
    check_prerequisites(engines)
    if "diskcache" in engines:
        ensure_diskcache()
    runner = build_runner() if {"blobcache", "rawfs"} & set(engines) else None
    ensure_corpus(args.corpus)
    samples = {engine: [] for engine in engines}
    with tempfile.TemporaryDirectory(prefix="blobcache-compare-") as work:
        for run in range(args.runs):
            order = engines[run % len(engines):] + engines[:run % len(engines)]
            for engine in order:
                print(f"compare: run {run + 1}/{args.runs}: {engine}", file=sys.stderr)
                if engine == "diskcache":
                    results = run_diskcache(args.corpus, workloads, work, args.w4_runs)
                else:
                    results = run_swift(runner, engine, args.corpus, workloads, work, args.w4_runs, args.compression)
                samples[engine].append(results)
    table = summarize(samples)
    if args.compression:
        print(f"\nBlobCache's compression: {args.compression} (w3codecs rows: each codec, whatever the preset)")
    print_table(table, args.runs)
    if args.chart:
        write_chart(table, args.runs, args.chart)
    if "w5" in workloads:
        print(f"\nW5 hit-ratio ceiling (a cache that never evicts, same trace): {w5_ceiling(args.corpus):.3f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(samples, f, indent=1)


if __name__ == "__main__":
    main()
