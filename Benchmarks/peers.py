#!/usr/bin/env python3
"""BlobCache beside native peers: LMDB, RocksDB, python-diskcache and raw files, in one run.

Every engine replays the same workloads on the same values and keys (Benchmarks/corpus/README.md):
W1 put and get of every corpus file keyed by its path; W2 put and get of 10,000 × 4 KiB and the
W2 90/10 mix (5,000 blobs stored untimed, then 50,000 ops: every tenth a put of a new blob, the
others gets of stored ones drawn by one fixed sequence); W3 put and get of 1,000 × 1 MiB (W2, W3
keyed by the MD5 hex of the blob); W5's trace replayed without a cap. Each timed phase starts
after sync, page cache hot, in a fresh directory; engines run in rotation, --runs times; the
table gives medians with min–max and BlobCache's ratio to LMDB and RocksDB.

    python3 Benchmarks/peers.py                       # 3 runs, every engine and workload
    python3 Benchmarks/peers.py --runs 1 --workloads w2,w2mixed --json /tmp/peers.json
    python3 Benchmarks/peers.py --from-json /tmp/peers.json   # the table again, runs nothing

Engines and what each promises when a put returns (the durability line the table repeats):
- BlobCache: the default configuration through the Swift workload runner (Benchmarks/Sources/
  workload): durability processCrashSafe (the journal record written, no fsync per put).
- raw files: the runner's --engine rawfs, temporary file renamed into place, no fsync.
- LMDB, Benchmarks/native/lmdb_bench.c over liblmdb, MDB_NOSYNC: per-txn (one write txn per
  put, one read txn per get: what a cache serving independent calls must do; the fair peer of
  BlobCache's default) and batched (every put of a phase in one txn, its gets in one: LMDB's best
  case, where nothing is committed before the end).
- RocksDB, Benchmarks/native/rocksdb_bench.c over the C API: default options, and BlobDB
  (enable_blob_files, min_blob_size 4096); the WAL on, sync=false.
- python-diskcache: compare.py's own functions (SQLite, files above 32 KB).
And the physical limits on the same machine: MD5, LZ4 decoding and memcpy (Benchmarks/native/
limits.c on W3's blobs) and `dd` of a page-cached file to /dev/null.

The C programs are compiled here with `cc -O2` into Benchmarks/.build/native; a missing header
stops it with one line naming the Debian package (Tools/ensure-deps.sh --peers installs them).
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
sys.path.insert(0, HERE)
import compare  # noqa: E402  (the runner, diskcache and corpus helpers are compare.py's)
from compare import Failure, fmt  # noqa: E402

NATIVE = os.path.join(HERE, "native")
BUILD = os.path.join(HERE, ".build", "native")
WORKLOADS = ["w1", "w2", "w2mixed", "w3", "w5nocap"]
ENGINES = ["blobcache", "lmdb", "lmdb-batch", "rocksdb", "rocksdb-blob", "diskcache", "rawfs"]
NAMES = {"blobcache": "BlobCache", "lmdb": "LMDB (txn per op)", "lmdb-batch": "LMDB (batched)",
         "rocksdb": "RocksDB (default)", "rocksdb-blob": "RocksDB (blob files)",
         "diskcache": "python-diskcache", "rawfs": "raw files"}
PROMISES = {
    "blobcache": "default Configuration (durability processCrashSafe; compression adaptive: LZ4 kept where it saves "
                 "at least 1/8, 3/4 from 256 KiB; 16 MiB memory tier; packs below 64 KiB, a file each above): "
                 "a put is in the journal (written, not fsynced) when it returns; survives a process "
                 "crash, an OS crash or power loss can lose the last puts",
    "lmdb": "MDB_NOSYNC, one write txn per put, one read txn per get (reset/renew): each put committed when it "
            "returns (survives a process crash); no fsync, so an OS crash can lose the last commits (or, per "
            "lmdb.h, corrupt the file where the file system reorders writes)",
    "lmdb-batch": "MDB_NOSYNC, all puts of a phase in one write txn, all gets in one read txn: nothing committed "
                  "until the phase's single commit (a crash loses the whole batch); LMDB's best case",
    "rocksdb": "default options, WAL on, sync=false: a put is in the WAL (written, not fsynced) when it returns; "
               "survives a process crash, an OS crash can lose the last puts",
    "rocksdb-blob": "as RocksDB (default) plus enable_blob_files, min_blob_size 4096 (values of 4 KiB and more "
                    "go to blob files, the LSM tree keeps references)",
    "diskcache": "diskcache.Cache defaults (SQLite WAL, synchronous=NORMAL: no fsync per set; files above 32 KB)",
    "rawfs": "temporary file + rename per put, no fsync: a put survives a process crash, not an OS crash",
}
# (workload, metric) rows of the table; MB/s only where values are large enough to matter.
ROWS = [("W1.put", "opsPerSecond"), ("W1.put", "megabytesPerSecond"), ("W1.get", "opsPerSecond"),
        ("W1.get", "megabytesPerSecond"), ("W2.put", "opsPerSecond"), ("W2.get", "opsPerSecond"),
        ("W2.mixed", "opsPerSecond"), ("W3.put", "opsPerSecond"), ("W3.put", "megabytesPerSecond"),
        ("W3.get", "opsPerSecond"), ("W3.get", "megabytesPerSecond"), ("W5.nocap", "opsPerSecond")]
UNITS = {"opsPerSecond": "ops/s", "megabytesPerSecond": "MB/s"}
PACKAGES = {"lmdb.h": "liblmdb-dev", "rocksdb/c.h": "librocksdb-dev", "lz4.h": "liblz4-dev",
            "openssl/evp.h": "libssl-dev"}
PROGRAMS = {"lmdb_bench": (["lmdb.h", "openssl/evp.h"], ["-llmdb", "-lcrypto"]),
            "rocksdb_bench": (["rocksdb/c.h", "openssl/evp.h"], ["-lrocksdb", "-lcrypto"]),
            "limits": (["lz4.h", "openssl/evp.h"], ["-llz4", "-lcrypto"])}
# The targets: BlobCache's median over the peer's median must reach the factor.
TARGETS = [("W2.get", "lmdb", 1.0), ("W2.get", "rocksdb", 2.0), ("W2.put", "rocksdb", 1.0), ("W2.put", "lmdb", 3.0)]


def compile_native(name):
    """Compiles Benchmarks/native/NAME.c with cc -O2 unless the binary is newer than its sources."""
    headers, libraries = PROGRAMS[name]
    source = os.path.join(NATIVE, name + ".c")
    binary = os.path.join(BUILD, name)
    sources = [source, os.path.join(NATIVE, "bench_common.h")]
    if os.path.exists(binary) and all(os.path.getmtime(binary) > os.path.getmtime(s) for s in sources):
        return binary
    if shutil.which("cc") is None:
        raise Failure("cc is not on PATH: apt-get install gcc")
    for header in headers:
        probe = subprocess.run(["cc", "-E", "-x", "c", "-"], input=f"#include <{header}>\n",
                               capture_output=True, text=True)
        if probe.returncode != 0:
            raise Failure(f"<{header}> is missing: apt-get install {PACKAGES[header]} (or Tools/ensure-deps.sh --peers)")
    os.makedirs(BUILD, exist_ok=True)
    built = subprocess.run(["cc", "-O2", source, "-o", binary] + libraries, capture_output=True, text=True)
    if built.returncode != 0:
        raise Failure(f"cc -O2 {name}.c failed: {compare.error_line(built.stderr)}")
    return binary


def run_native(binary, mode, corpus, workloads, work):
    ran = subprocess.run([binary, "--mode", mode, "--corpus", corpus, "--workloads", ",".join(workloads),
                          "--work", work], capture_output=True, text=True)
    shutil.rmtree(work, ignore_errors=True)
    if ran.returncode != 0:
        raise Failure(f"{os.path.basename(binary)} --mode {mode} failed (exit {ran.returncode}): "
                      f"{compare.last_line(ran.stderr or ran.stdout)}")
    return json.loads(ran.stdout.strip().splitlines()[-1])["results"]


# ---------------------------------------------------------------- diskcache's share

MIXED_PRELOAD, MIXED_OPS = 5_000, 50_000


def mixed_indices(stored_at_start=MIXED_PRELOAD, ops=MIXED_OPS):
    """W2-mixed's operations as (put?, blob index), the sequence Mixed.swift and bench_common.h
    replay: op n puts the next new blob when n % 10 == 9, else gets one drawn by a 64-bit LCG."""
    state, stored, sequence = 0x9E3779B97F4A7C15, stored_at_start, []
    for n in range(ops):
        if n % 10 == 9:
            sequence.append((True, stored))
            stored += 1
        else:
            state = (state * 6364136223846793005 + 1442695040888963407) & 0xFFFFFFFFFFFFFFFF
            sequence.append((False, (state >> 33) % stored))
    return sequence


def diskcache_w2mixed(corpus_dir, work):
    import diskcache
    blobs = compare._blobs(corpus_dir, "synth_4k.bin", 4096, 10_000)
    keys = [compare.md5_hex(b) for b in blobs]
    directory = os.path.join(work, "W2mixed")
    cache = diskcache.Cache(directory, size_limit=1 << 40)
    for index in range(MIXED_PRELOAD):
        cache.set(keys[index], blobs[index])
    sequence = mixed_indices()
    hits = gets = nbytes = digest = 0
    compare.settle()
    start = time.perf_counter()
    for put, index in sequence:
        if put:
            cache.set(keys[index], blobs[index])
            nbytes += 4096
        else:
            gets += 1
            digest += index
            value = cache.get(keys[index])
            if value is not None:
                hits += 1
                nbytes += len(value)
    seconds = time.perf_counter() - start
    cache.close()
    shutil.rmtree(directory, ignore_errors=True)
    result = compare.measure("W2.mixed", MIXED_OPS, seconds, nbytes, hits / max(1, gets))
    result["note"] = f"sequence {digest}"
    return result


def diskcache_w5nocap(corpus_dir, work):
    """W5's trace through diskcache with no cap (compare.py's replay, without its LRU cap)."""
    return compare.diskcache_w5(compare.Corpus(corpus_dir), work, name="W5.nocap")


def run_diskcache(corpus_dir, workloads, work):
    os.makedirs(work, exist_ok=True)
    results = compare.run_diskcache(corpus_dir, [w for w in workloads if w in ("w1", "w2", "w3")], work, 1)
    if "w2mixed" in workloads:
        results.append(diskcache_w2mixed(corpus_dir, work))
    if "w5nocap" in workloads:
        results.append(diskcache_w5nocap(corpus_dir, work))
    shutil.rmtree(work, ignore_errors=True)
    return results


# ---------------------------------------------------------------- physical limits

def dd_speed(path):
    """MB/s of `dd if=PATH of=/dev/null bs=1M`, the file read once before so it is in the page cache."""
    subprocess.run(["dd", f"if={path}", "of=/dev/null", "bs=1M"], capture_output=True)
    start = time.perf_counter()
    ran = subprocess.run(["dd", f"if={path}", "of=/dev/null", "bs=1M"], capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if ran.returncode != 0:
        raise Failure(f"dd failed: {compare.last_line(ran.stderr)}")
    return os.path.getsize(path) / 1e6 / seconds


def measure_limits(corpus):
    ran = subprocess.run([compile_native("limits"), "--corpus", corpus], capture_output=True, text=True)
    if ran.returncode != 0:
        raise Failure(f"limits failed (exit {ran.returncode}): {compare.last_line(ran.stderr)}")
    limits = json.loads(ran.stdout.strip().splitlines()[-1])
    limits["ddMBps"] = dd_speed(os.path.join(corpus, "synth_1m.bin"))
    return limits


# ---------------------------------------------------------------- report

def table_of(samples):
    """engine -> (workload, metric) -> values over the runs."""
    table = {}
    for engine, runs in samples.items():
        for results in runs:
            for result in results:
                for metric in ("opsPerSecond", "megabytesPerSecond", "hitRatio"):
                    if metric in result:
                        table.setdefault(engine, {}).setdefault((result["workload"], metric), []).append(result[metric])
    return table


def ratio(table, workload, metric, engine):
    a = table.get("blobcache", {}).get((workload, metric))
    b = table.get(engine, {}).get((workload, metric))
    if not a or not b:
        return None
    return statistics.median(a) / statistics.median(b)


def ratio_text(value):
    return "—" if value is None else f"{value:.2f}×"


def check_same_calls(samples):
    """Every engine replayed the same W2-mixed sequence and saw the same W5 hit ratio (no eviction)."""
    notes, hits = {}, {}
    for engine, runs in samples.items():
        for results in runs:
            for result in results:
                if result["workload"] == "W2.mixed":
                    notes.setdefault(result.get("note"), set()).add(engine)
                if result["workload"] in ("W5.nocap", "W2.mixed"):
                    hits.setdefault((result["workload"], round(result["hitRatio"], 6)), set()).add(engine)
    problems = []
    if len(notes) > 1:
        problems.append("W2.mixed sequences differ: " + "; ".join(f"{n}: {sorted(e)}" for n, e in notes.items()))
    for workload in ("W5.nocap", "W2.mixed"):
        seen = {k[1]: e for k, e in hits.items() if k[0] == workload}
        if len(seen) > 1:
            problems.append(f"{workload} hit ratios differ: " + "; ".join(f"{h}: {sorted(e)}" for h, e in seen.items()))
    return problems


def print_report(data):
    samples, runs = data["samples"], data["runs"]
    engines = [e for e in ENGINES if e in samples]
    table = table_of(samples)
    peers = [e for e in ("lmdb", "lmdb-batch", "rocksdb", "rocksdb-blob") if e in engines]
    print(f"\nMedians of {runs} run(s) (min–max); the last columns are BlobCache's median over the peer's (>1: BlobCache faster).\n")
    print("| workload | unit | " + " | ".join(NAMES[e] for e in engines) + " | "
          + " | ".join(f"vs {NAMES[p]}" for p in peers) + " |")
    print("|---|---|" + "---|" * (len(engines) + len(peers)))
    for workload, metric in ROWS:
        cells = [fmt(table.get(e, {}).get((workload, metric))) for e in engines]
        if all(c == "—" for c in cells):
            continue
        ratios = [ratio_text(ratio(table, workload, metric, p)) for p in peers]
        print(f"| {workload} | {UNITS[metric]} | " + " | ".join(cells) + " | " + " | ".join(ratios) + " |")
    for workload in ("W2.mixed", "W5.nocap"):
        hits = {e: table.get(e, {}).get((workload, "hitRatio")) for e in engines}
        if any(hits.values()):
            print(f"\n{workload} hit ratio: " + ", ".join(f"{NAMES[e]} {statistics.median(h):.3f}" for e, h in hits.items() if h))
    problems = check_same_calls(samples)
    for problem in problems:
        print(f"\n⚠ {problem}")
    print("\nWhat each engine promises when a put returns:\n")
    for engine in engines:
        print(f"- {NAMES[engine]}: {PROMISES[engine]}")
    print_limits(data.get("limits") or [])
    print_targets(table)


def print_limits(limits):
    if not limits:
        return
    med = lambda key: statistics.median(l[key] for l in limits)
    print(f"\nPhysical limits on this machine (median of {len(limits)}): MD5 {med('md5MBps'):,.0f} MB/s, "
          f"LZ4 decode {med('lz4DecodeMBps'):,.0f} MB/s (W3 blobs, ratio {med('lz4Ratio'):.2f}), "
          f"memcpy of 1 MiB blocks {med('memcpyMBps'):,.0f} MB/s, dd of a page-cached file to /dev/null "
          f"(bs=1M) {med('ddMBps'):,.0f} MB/s")


def target_lines(table):
    lines = []
    for workload, peer, factor in TARGETS:
        value = ratio(table, workload, "opsPerSecond", peer)
        if value is None:
            continue
        verdict = "met" if value >= factor else "missed"
        lines.append(f"{workload} ≥ {factor:g}× {NAMES[peer]}: {value:.2f}× ({verdict})")
    return lines


def print_targets(table):
    lines = target_lines(table)
    if lines:
        print("\nTargets (BlobCache's median over the peer's):\n")
        for line in lines:
            print(f"- {line}")


def render_markdown(data):
    """The performance document's section on the peers, from the JSON `--json` wrote: one table
    (BlobCache, LMDB per-txn and batched, RocksDB default and blob files, python-diskcache, raw
    files) of W1, W2 put/get/mixed, W3 and W5 without a cap, then the promises, the physical limits
    and the command.

        from peers import render_markdown
        section = render_markdown(json.load(open("/tmp/peers.json")))
    """
    samples, runs = data["samples"], data["runs"]
    engines = [e for e in ENGINES if e in samples]
    table = table_of(samples)
    out = [f"Medians of {runs} runs (min–max), each engine on the same values and keys in one run; "
           "MB/s are of value bytes (10^6). The last two columns are BlobCache's median over LMDB's "
           "(a transaction per call) and RocksDB's (default options).", ""]
    out.append("| workload | unit | " + " | ".join(NAMES[e] for e in engines) + " | BlobCache ÷ LMDB | BlobCache ÷ RocksDB |")
    out.append("|---|---|" + "---|" * (len(engines) + 2))
    for workload, metric in ROWS:
        cells = [fmt(table.get(e, {}).get((workload, metric))) for e in engines]
        if all(c == "—" for c in cells):
            continue
        ratios = [ratio_text(ratio(table, workload, metric, p)) for p in ("lmdb", "rocksdb")]
        out.append(f"| {workload} | {UNITS[metric]} | " + " | ".join(cells) + " | " + " | ".join(ratios) + " |")
    hits = table.get("blobcache", {}).get(("W5.nocap", "hitRatio"))
    out += ["", "W2.mixed: 5,000 blobs stored untimed, then 50,000 ops, every tenth a put of a new blob, the others "
            "gets of stored ones, one sequence for all engines. W5.nocap: the W5 trace with no cap (no eviction)"
            + (f", hit ratio {statistics.median(hits):.3f} in every engine." if hits else "."), ""]
    out += [f"- **{NAMES[e]}**: {PROMISES[e]}" for e in engines]
    limits = data.get("limits") or []
    if limits:
        med = lambda key: statistics.median(l[key] for l in limits)
        out += ["", "Physical limits on the same machine, same run (`Benchmarks/native/limits.c`, `dd`):", "",
                "| limit | MB/s |", "|---|---|",
                f"| MD5 (OpenSSL), 1 MiB blocks | {med('md5MBps'):,.0f} |",
                f"| LZ4 decode (liblz4), W3 blobs (ratio {med('lz4Ratio'):.2f}) | {med('lz4DecodeMBps'):,.0f} |",
                f"| memcpy, 1 MiB blocks | {med('memcpyMBps'):,.0f} |",
                f"| `dd if=<page-cached file> of=/dev/null bs=1M` | {med('ddMBps'):,.0f} |"]
    targets = target_lines(table)
    if targets:
        out += ["", "Targets: " + "; ".join(targets) + "."]
    out += ["", f"    {data.get('command', 'python3 Benchmarks/peers.py')}", ""]
    return "\n".join(out)


def corpus_identity(corpus):
    try:
        with open(os.path.join(corpus, "stats.json")) as f:
            stats = json.load(f)
        return {"manifest_md5": stats.get("manifest_md5"), "files": stats.get("files"), "bytes": stats.get("total_bytes")}
    except (OSError, ValueError):
        return {}


def run():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--corpus", default="/tmp/blobcorpus")
    parser.add_argument("--workloads", default=",".join(WORKLOADS), help="of " + ",".join(WORKLOADS))
    parser.add_argument("--engines", default=",".join(ENGINES), help="of " + ",".join(ENGINES))
    parser.add_argument("--json", help="write every sample (and the limits) to this file")
    parser.add_argument("--from-json", help="print the report from a saved --json file; runs nothing")
    args = parser.parse_args()
    if args.from_json:
        with open(args.from_json) as f:
            print_report(json.load(f))
        return
    workloads, engines = args.workloads.lower().split(","), args.engines.split(",")
    for name, known in (("workload", WORKLOADS), ("engine", ENGINES)):
        unknown = [x for x in (workloads if name == "workload" else engines) if x not in known]
        if unknown:
            raise Failure(f"unknown {name} {', '.join(unknown)}: choose from {', '.join(known)}")
    started = time.time()
    compare.check_prerequisites(engines)
    binaries = {}
    if {"lmdb", "lmdb-batch"} & set(engines):
        binaries["lmdb"] = compile_native("lmdb_bench")
    if {"rocksdb", "rocksdb-blob"} & set(engines):
        binaries["rocksdb"] = compile_native("rocksdb_bench")
    compile_native("limits")
    if "diskcache" in engines:
        compare.ensure_diskcache()
    runner = compare.build_runner() if {"blobcache", "rawfs"} & set(engines) else None
    compare.ensure_corpus(args.corpus)
    samples, limits = {e: [] for e in engines}, []
    with tempfile.TemporaryDirectory(prefix="blobcache-peers-") as work:
        for run_index in range(args.runs):
            order = engines[run_index % len(engines):] + engines[:run_index % len(engines)]
            for engine in order:
                print(f"peers: run {run_index + 1}/{args.runs}: {engine}", file=sys.stderr)
                directory = os.path.join(work, f"{engine}-{run_index}")
                if engine in ("blobcache", "rawfs"):
                    results = compare.run_swift(runner, engine, args.corpus, workloads, directory, 1)
                elif engine == "diskcache":
                    results = run_diskcache(args.corpus, workloads, directory)
                else:
                    family, mode = engine.split("-") if "-" in engine else (engine, None)
                    mode = mode or ("txn" if family == "lmdb" else "default")
                    results = run_native(binaries[family], mode, args.corpus, workloads, directory)
                samples[engine].append([r for r in results if r["workload"] != "W1.fsck"])
            limits.append(measure_limits(args.corpus))
    command = "python3 Benchmarks/peers.py" + (f" --runs {args.runs}" if args.runs != 3 else "") \
        + (f" --workloads {args.workloads}" if workloads != WORKLOADS else "") \
        + (f" --engines {args.engines}" if engines != ENGINES else "")
    data = {"runs": args.runs, "command": command, "corpus": corpus_identity(args.corpus),
            "seconds": round(time.time() - started), "promises": {e: PROMISES[e] for e in engines},
            "samples": samples, "limits": limits}
    print_report(data)
    print(f"\npeers: {data['seconds']} s in all")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(data, f, indent=1)
    if check_same_calls(samples):
        raise Failure("the engines did not replay the same calls (see ⚠ above)")


def main():
    try:
        run()
    except Failure as failure:
        sys.exit(f"peers: {failure}")
    except OSError as error:
        sys.exit(f"peers: {error}")


if __name__ == "__main__":
    main()
