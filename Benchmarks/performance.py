#!/usr/bin/env python3
"""docs/PERFORMANCE.md, generated: BlobCache against python-diskcache and raw files on W1–W5.

    python3 Benchmarks/performance.py                # run the comparison (3 runs), then render
    python3 Benchmarks/performance.py --runs 5
    python3 Benchmarks/performance.py --render       # render again from docs/performance.json only
    python3 Benchmarks/performance.py --check        # exit 1 if the document is not what the JSON gives
    python3 Benchmarks/performance.py --runs 1 --workloads w2     # a quick try, not for publishing

A run records the machine (CPU, cores, memory, OS and kernel, the file system the caches are
written to, Swift, Python and diskcache versions), the repository's commit, the corpus's
manifest MD5, the date and the commands, then runs

    python3 Benchmarks/compare.py --runs N --workloads w1,w2,w3,w4,w5 --json docs/performance.json

which builds the corpus (Benchmarks/corpus/make_corpus.py) and installs diskcache with pip when
they are missing, builds the workload runner in release mode, and writes every sample. Then it
adds the facts to docs/performance.json and renders docs/PERFORMANCE.md and docs/performance.svg
from it. If compare.py fails, the three files are left as they were.

--render and --check read docs/performance.json and nothing else (standard library only; no
corpus, no build): every figure in docs/PERFORMANCE.md comes from that file. --check renders in
memory and exits 1, with one line, if docs/PERFORMANCE.md or docs/performance.svg differs.
"""
import argparse
import datetime
import json
import os
import platform
import shlex
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.dont_write_bytecode = True   # no Benchmarks/__pycache__ in the work tree
import compare  # noqa: E402  (the same summaries, flags, ratios and chart as compare.py prints)

JSON_PATH = os.path.join(ROOT, "docs", "performance.json")
MARKDOWN_PATH = os.path.join(ROOT, "docs", "PERFORMANCE.md")
CHART_PATH = os.path.join(ROOT, "docs", "performance.svg")
# What `Benchmarks/remote.py s3|redis --json` recorded: the remote tier beside the plain clients.
REMOTE_JSON_PATH = os.path.join(ROOT, "docs", "remote-performance.json")
REMOTE_TITLES = {"s3": "S3 (SeaweedFS `weed mini`)", "redis": "Redis Cluster (three masters)"}
# The sections other benchmark scripts recorded, each rendered by that script's render_markdown
# from the JSON it wrote with --json (a section whose file is missing is left out).
SECTIONS = [
    ("peers", "peers-performance.json", "Beside native peers: LMDB and RocksDB",
     "python3 Benchmarks/peers.py --runs 3 --json docs/peers-performance.json"),
    ("eviction", "eviction-performance.json", None,
     "python3 Benchmarks/eviction.py --rounds 9 --json docs/eviction-performance.json"),
    ("compression", "compression-performance.json", "Compression by default: `adaptive` beside the other presets",
     "python3 Benchmarks/compression.py --runs 3 --json docs/compression-performance.json"),
    ("tree", "export-performance.json", "Export and import of a tree of files, against `cp -r`",
     "python3 Benchmarks/tree.py --runs 5 --json docs/export-performance.json")]
DEFAULT_RUNS = 3
DEFAULT_WORKLOADS = "w1,w2,w3,w4,w5"
DEFAULT_CORPUS = "/tmp/blobcorpus"
ENGINES = [("blobcache", "BlobCache"), ("diskcache", "python-diskcache"), ("rawfs", "raw files")]
RATIO_METRICS = ("opsPerSecond", "megabytesPerSecond", "seconds")
WORKLOAD_NAMES = {
    "w1": "W1 puts then gets every corpus file",
    "w2": "W2 10,000 values of 4 KiB",
    "w3": "W3 1,000 values of 1 MiB",
    "w4": "W4 opens a 100,000-entry cache in a fresh process and gets one key",
    "w5": "W5 replays a zipf trace of 90% gets under a cap of a quarter of the corpus",
    "w6": "W6 puts and gets from 1 and 4 processes on one cache",
}
FIGURE_NAMES = {"W1.put": "W1 put", "W1.get": "W1 get", "W2.put": "W2 put", "W2.get": "W2 get",
                "W3.put": "W3 put", "W3.get": "W3 get", "W4.open+get": "W4 open + get", "W5": "W5",
                "W1.fsck": "W1 fsck", "W6.1p": "W6, 1 process", "W6.4p": "W6, 4 processes"}
UNITS = dict(compare.UNITS, seconds="ms, lower is better")


# ---------------------------------------------------------------- facts about the machine

def read(path):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return ""


def output(command, cwd=None):
    try:
        ran = subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return ran.stdout.strip() if ran.returncode == 0 else None


def cpu_model():
    for line in read("/proc/cpuinfo").splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine() or None


def memory_bytes():
    for line in read("/proc/meminfo").splitlines():
        if line.startswith("MemTotal:"):
            return int(line.split()[1]) * 1024
    return None


def os_name():
    for line in read("/etc/os-release").splitlines():
        if line.startswith("PRETTY_NAME="):
            return line.split("=", 1)[1].strip().strip('"')
    return platform.platform()


def file_system(path):
    """The type of the file system holding `path` (the longest mount point above it)."""
    best, kind = "", None
    real = os.path.realpath(path)
    for line in read("/proc/mounts").splitlines():
        fields = line.split()
        if len(fields) < 3:
            continue
        mount = fields[1].replace("\\040", " ")
        if (real == mount or real.startswith(mount.rstrip("/") + "/")) and len(mount) > len(best):
            best, kind = mount, fields[2]
    return kind


def machine_facts():
    swift = output(["swift", "--version"])
    work = tempfile.gettempdir()
    return {
        "cpu": cpu_model(),
        "cores": os.cpu_count(),
        "memoryBytes": memory_bytes(),
        "os": os_name(),
        "kernel": f"{platform.system()} {platform.release()}",
        "workDirectory": work,
        "workFileSystem": file_system(work),
        "swift": swift.splitlines()[0] if swift else None,
        "python": platform.python_version(),
    }


def repository_facts():
    commit = output(["git", "rev-parse", "HEAD"], cwd=ROOT)
    status = output(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT)
    return {"commit": commit, "uncommittedChanges": bool(status) if commit else None}


def corpus_facts(corpus):
    try:
        with open(os.path.join(corpus, "stats.json")) as f:
            stats = json.load(f)
    except (OSError, ValueError):
        return {"path": corpus}
    return {"path": corpus, "manifestMD5": stats.get("manifest_md5"), "files": stats.get("files"),
            "bytes": stats.get("total_bytes")}


def diskcache_version():
    return output([sys.executable, "-c", "import diskcache; print(diskcache.__version__)"])


# ---------------------------------------------------------------- running

def run(args):
    workloads = [w.strip().lower() for w in args.workloads.split(",") if w.strip()]
    command = ["python3", "Benchmarks/performance.py"] + sys.argv[1:]
    compare_args = ["Benchmarks/compare.py", "--runs", str(args.runs), "--workloads", ",".join(workloads)]
    if args.corpus != DEFAULT_CORPUS:
        compare_args += ["--corpus", args.corpus]
    compare_args += ["--json", os.path.relpath(JSON_PATH, ROOT)]
    started = datetime.datetime.now(datetime.timezone.utc)
    document = {
        "about": "Written by Benchmarks/performance.py; docs/PERFORMANCE.md and docs/performance.svg "
                 "are rendered from this file (python3 Benchmarks/performance.py --render).",
        "command": shlex.join(command),
        "compareCommand": shlex.join(["python3"] + compare_args),
        "runs": args.runs,
        "workloads": workloads,
        "date": started.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "machine": machine_facts(),
        "repository": repository_facts(),
    }
    before = read_bytes(JSON_PATH)
    print(f"performance: {document['compareCommand']}", file=sys.stderr, flush=True)
    start = time.monotonic()
    status = subprocess.run([sys.executable] + compare_args, cwd=ROOT).returncode
    seconds = time.monotonic() - start
    if status != 0:
        restore(before)
        sys.exit(f"performance: compare.py failed (exit {status}); docs/performance.json, "
                 "docs/PERFORMANCE.md and docs/performance.svg are unchanged")
    samples = compare.load_samples(JSON_PATH)
    document["seconds"] = round(seconds, 1)
    document["machine"]["diskcache"] = diskcache_version() if "diskcache" in samples else None
    document["corpus"] = corpus_facts(args.corpus)
    if "w5" in workloads:
        document["corpus"]["w5HitRatioCeiling"] = compare.w5_ceiling(args.corpus)
    document["samples"] = samples
    write(JSON_PATH, json.dumps(document, indent=1) + "\n")
    render_files(document)
    print(f"performance: wrote docs/performance.json, docs/PERFORMANCE.md and docs/performance.svg "
          f"({seconds / 60:.0f} min)", file=sys.stderr)


def restore(before):
    """compare.py writes the JSON only at its very end, but leave no half-written state."""
    if read_bytes(JSON_PATH) != before:
        if before is None:
            os.remove(JSON_PATH)
        else:
            with open(JSON_PATH, "wb") as f:
                f.write(before)


def read_bytes(path):
    try:
        with open(path, "rb") as f:
            return f.read()
    except FileNotFoundError:
        return None


def write(path, text):
    temporary = path + ".tmp"
    with open(temporary, "w") as f:
        f.write(text)
    os.replace(temporary, path)


# ---------------------------------------------------------------- rendering

def load(path=JSON_PATH):
    with open(path) as f:
        document = json.load(f)
    if "samples" not in document:          # the bare samples of a compare.py --json run
        document = {"samples": document}
    return document


def runs_of(document):
    return document.get("runs") or max((len(v) for v in document["samples"].values()), default=0)


def number(value):
    digits = 3 if abs(value) < 10 else (1 if abs(value) < 1000 and not float(value).is_integer() else 0)
    return f"{value:,.{digits}f}"


def figure(values):
    """Median, then (min–max) when the runs differ, then ⚑ when compare.py would flag it."""
    if not values:
        return "—"
    median, low, high = statistics.median(values), min(values), max(values)
    text = number(median)
    if number(low) != number(high):
        text += f" ({number(low)}–{number(high)})"
    return text + (" ⚑" if compare.flagged(values) else "")


def ratio(bc, other, metric):
    """BlobCache's advantage: the ratio of the medians, then the lowest and highest of the
    per-run ratios (each run's engines ran back to back)."""
    if metric not in RATIO_METRICS or not bc or not other:
        return "—"
    text = compare.ratio(bc, other, metric)
    if len(bc) == len(other) and len(bc) > 1:
        pairs = [(y / x if metric == "seconds" else x / y) for x, y in zip(bc, other)]
        if f"{min(pairs):.2f}" != f"{max(pairs):.2f}":
            text += f" ({min(pairs):.2f}–{max(pairs):.2f})"
    return text


def gib(n):
    return f"{n / 2**30:.1f} GiB"


def duration(seconds):
    minutes = seconds / 60
    if minutes < 2:
        return f"{seconds:.0f} s"
    if minutes < 90:
        return f"{minutes:.0f} min"
    return f"{minutes / 60:.1f} h"


def render(document):
    """docs/PERFORMANCE.md and docs/performance.svg, as text, from the JSON document alone."""
    samples = document["samples"]
    runs = runs_of(document)
    table = compare.summarize(samples)
    machine = document.get("machine", {})
    repo = document.get("repository", {})
    corpus = document.get("corpus", {})
    workloads = document.get("workloads") or sorted({r["workload"].split(".")[0].lower()
                                                      for runs_ in samples.values() for rs in runs_ for r in rs})
    unknown = "not recorded"
    out = ["# Performance", "",
           "<!-- Generated by Benchmarks/performance.py from docs/performance.json: do not edit by hand. "
           "Regenerate with the commands at the end. -->", ""]

    described = [WORKLOAD_NAMES[w] for w in workloads if w in WORKLOAD_NAMES]
    diskcache = f" {machine['diskcache']}" if machine.get("diskcache") else ""
    run_words = f"{runs} runs"
    out.append(
        "BlobCache, with its default configuration, is compared with "
        f"[python-diskcache](https://pypi.org/project/diskcache/){diskcache} (its defaults: SQLite, plus a file "
        "for each value of 32 KB or more" + ("; LRU eviction with `size_limit` for W5" if "w5" in workloads else "")
        + ") and with raw files (each value "
        "written to a temporary file and renamed into a two-level tree named by its key, read back with open + "
        "read: no index, no hashing, no compression), on the standard workloads of "
        "[the benchmark corpus](../Benchmarks/corpus/README.md)"
        + (f" ({'; '.join(described)})" if described else "") + ". "
        "BlobCache and raw files run in the Swift workload runner (`Benchmarks/Sources/workload`), "
        "python-diskcache in CPython, with a single calling thread, the page cache hot and a fresh cache "
        "directory each time. "
        + (f"Each figure is the median of {run_words} with the lowest and highest run in parentheses; in each "
           "run the three engines ran one after the other, the order rotating from run to run so that they "
           "share the machine's slow and fast moments" if runs > 1 else
           "Each figure is from a single run, the three engines one after the other")
        + ", and every engine syncs the file system before each "
        "timed phase, so that no phase pays for the writes of the one before. The ratios are BlobCache's "
        "advantage (above 1, BlobCache is faster)" + (": the ratio of the medians" if runs > 1 else "")
        + (", then the lowest and highest of the ratios within each run" if runs > 1 else "") + ". "
        f"⚑ marks a figure whose runs spread (max − min) over {compare.SPREAD_LIMIT:.0%} of its median: "
        "quote it only with that warning.")
    out.append("")

    out += ["## Machine", ""]
    cores = machine.get("cores")
    out.append(f"- CPU: {machine.get('cpu') or unknown}"
               + (f", {cores} logical {'core' if cores == 1 else 'cores'}" if cores else ""))
    out.append(f"- Memory: {gib(machine['memoryBytes']) if machine.get('memoryBytes') else unknown}")
    out.append(f"- OS: {machine.get('os') or unknown}, kernel {machine.get('kernel') or unknown}")
    if machine.get("workDirectory"):
        out.append(f"- Caches written under `{machine['workDirectory']}`"
                   + (f" ({machine['workFileSystem']})" if machine.get("workFileSystem") else ""))
    out.append(f"- Swift: {machine.get('swift') or unknown}")
    out.append(f"- Python: {machine.get('python') or unknown}")
    if repo.get("commit"):
        out.append(f"- Commit: `{repo['commit'][:10]}`"
                   + (" with uncommitted changes" if repo.get("uncommittedChanges") else ""))
    else:
        out.append(f"- Commit: {unknown}")
    if document.get("date"):
        out.append(f"- Date: {document['date'][:10]} {document['date'][11:16]} UTC")
    if corpus.get("manifestMD5"):
        out.append(f"- Corpus: {corpus['files']:,} files, {corpus['bytes']:,} bytes, manifest MD5 "
                   f"`{corpus['manifestMD5']}` (it depends on the machine image: "
                   "[why](../Benchmarks/corpus/README.md#the-corpus-depends-on-the-machine-image))")
    if document.get("command"):
        out.append(f"- Command: `{document['command']}`, which ran `{document.get('compareCommand', 'compare.py')}`"
                   + (f" and took {duration(document['seconds'])} in all" if document.get("seconds") else ""))
    out.append("")

    out += ["## Results", ""]
    out.append("| figure | BlobCache | python-diskcache | raw files | BlobCache vs python-diskcache "
               "| BlobCache vs raw files |")
    out.append("|---|---|---|---|---|---|")
    shown = []
    for workload, metric in compare.METRICS:
        cells = [table.get(engine, {}).get((workload, metric)) for engine, _ in ENGINES]
        if not any(cells):
            continue
        shown.append((workload, metric))
        name = f"{FIGURE_NAMES.get(workload, workload)}, {UNITS.get(metric, metric)}"
        vs = [ratio(cells[0], other, metric) for other in cells[1:]]
        out.append(f"| {name} | " + " | ".join(figure(c) for c in cells) + " | " + " | ".join(vs) + " |")
    out.append("")
    noisy = [f"{label} {FIGURE_NAMES.get(w, w)} {UNITS.get(m, m)}" for engine, label in ENGINES for w, m in shown
             if compare.flagged(table.get(engine, {}).get((w, m)))]
    if runs < 2:
        out.append("One run only: there is no spread to judge these figures by, so they are no more than a "
                   "first look.")
    elif noisy:
        out.append(f"⚑ {len(noisy)} of these figures spread over {compare.SPREAD_LIMIT:.0%} of their median: "
                   + "; ".join(noisy) + ".")
    else:
        out.append(f"No figure spreads over {compare.SPREAD_LIMIT:.0%} of its median.")
    ceiling = corpus.get("w5HitRatioCeiling")
    if ceiling is not None and any(w == "W5" for w, _ in shown):
        out += ["",f"W5's hit ratio is bounded by its trace: a cache that never evicted would hit {ceiling:.3f} "
                   "of the gets."]
    out.append("")
    out.append("![BlobCache and raw files: speed as a multiple of python-diskcache's, per workload, log scale]"
               "(performance.svg)")
    out.append("")

    out += recorded_sections()
    out += remote_section()

    out += ["## Regenerate", "",
            "From the root of a clone, with a Swift toolchain (6.2 or later) on `PATH` and Python 3 with pip:", "",
            "```sh",
            f"python3 Benchmarks/performance.py            # {DEFAULT_RUNS} runs; writes docs/performance.json, "
            "this file and docs/performance.svg",
            "python3 Benchmarks/performance.py --runs 5   # more runs",
            "python3 Benchmarks/performance.py --render   # this file and the chart again from docs/performance.json",
            "python3 Benchmarks/performance.py --check    # exit 1 if this file or the chart is not what the JSON gives",
            "```", "",
            "It runs `Benchmarks/compare.py`, which builds the corpus in `/tmp/blobcorpus` when it is missing "
            "(about 2 minutes and 1.9 GB, once), installs python-diskcache with pip when it is missing, and builds "
            "the workload runner in release mode; a missing prerequisite stops it with a one-line message and "
            "leaves these files as they were. "
            + (f"The run above took {duration(document['seconds'])}, builds included. " if document.get("seconds") else "")
            + "Run it on a quiet machine: the figures are only as steady as the machine is.", ""]

    out += ["## Other benchmarks", "",
            "Each prints its own figures; none of them feeds this page.", "",
            "- `Benchmarks/streaming.py` — a multi-gigabyte value through `blobcache put` and `get` against "
            "`cp` and `dd`, with peak memory, and `serve`'s memory under slow clients: "
            "`python3 Benchmarks/streaming.py`",
            "- `Benchmarks/serve_vs_nginx.py` — `blobcache serve` against nginx under wrk (GET and PUT, "
            "throughput and tail latency, latency with idle and slowloris connections; see "
            "[SERVE.md](SERVE.md)): `python3 Benchmarks/serve_vs_nginx.py`",
            "- `Benchmarks/remote.py` — the remote tier, and `serve`, against nginx on loopback: "
            "`python3 Benchmarks/remote.py tier` or `python3 Benchmarks/remote.py serve` (its `s3` and `redis` "
            "runs, with `--json docs/remote-performance.json`, feed the section above)",
            "- `Benchmarks/tree.py` — `blobcache import` and `export` of the corpus as a tree of files, against "
            "`cp -r` (and python-diskcache with `--diskcache`): `python3 Benchmarks/tree.py`",
            "- `Benchmarks/against.py` — this tree against an earlier commit on W1–W5, interleaved: "
            "`python3 Benchmarks/against.py COMMIT`",
            "- The `workload` runner's other workloads (W6 across processes, W3 per codec, readers, latency, "
            "scale, crash-open, encryption, …), listed by "
            "`swift run -c release --package-path Benchmarks workload --help`",
            "- Micro-benchmarks (ordo-one/benchmark: MD5, codecs, put and get by size, journal replay, put at the "
            "cap): `swift package --package-path Benchmarks benchmark`",
            ""]
    return "\n".join(out), compare.chart_svg(table, runs)


def recorded_sections():
    """Each of `SECTIONS` whose JSON is in docs/, as its script renders it, under its title
    (where the script gives none) and with the command that recorded it (where it names none)."""
    import importlib
    out = []
    for module, name, title, command in SECTIONS:
        path = os.path.join(ROOT, "docs", name)
        if not os.path.exists(path):
            continue
        with open(path) as f:
            body = importlib.import_module(module).render_markdown(json.load(f)).rstrip("\n")
        if title:
            out += [f"## {title}", ""]
        out += [body, ""]
        if command not in body:
            out += [f"Recorded with `{command}`.", ""]
    return out


def remote_section():
    """The remote tier's warm-up beside the plain clients, from docs/remote-performance.json."""
    if not os.path.exists(REMOTE_JSON_PATH):
        return []
    with open(REMOTE_JSON_PATH) as f:
        recorded = json.load(f)
    out = ["## The remote tier: S3 and Redis Cluster", "",
           "A new machine warming up from a remote: 1,000 values of 64 KiB (the corpus's `synth_64k.bin`) put "
           "through the remote tier, then read into an empty directory, every get a remote hit: two requests "
           "(the key record, then the blob), both checked (CRC, MD5 and SHA-256 of the value), and the value "
           "written back locally. Beside it, on the same server in the same run, plain clients fetch the same "
           "objects and check nothing. A ratio is BlobCache's requests per second over the plain client's. "
           "Medians of the rounds; servers on loopback, on the machine above.", ""]
    for what in ("s3", "redis"):
        run = recorded.get(what)
        if not run:
            continue
        out += [f"**{REMOTE_TITLES[what]}**, commit `{run['commit']}`, {run['date']}, {run['rounds']} rounds: "
                f"`{run['command']}`", "", "| measure | value | ratio |", "|---|---|---|"]
        for row in run["rows"]:
            ratio = "" if row["ratio"] is None else f"{row['ratio']:.2f}×"
            out.append(f"| {row['measure']} | {row['value']:,.1f} | {ratio} |")
        out.append("")
    return out


def render_files(document):
    markdown, chart = render(document)
    write(MARKDOWN_PATH, markdown)
    write(CHART_PATH, chart)


def check():
    try:
        document = load()
        markdown, chart = render(document)
    except (OSError, ValueError, KeyError, TypeError) as error:
        sys.exit(f"performance: cannot render docs/performance.json ({error})")
    stale = [name for name, path, text in (("docs/PERFORMANCE.md", MARKDOWN_PATH, markdown),
                                           ("docs/performance.svg", CHART_PATH, chart))
             if read(path) != text]
    if stale:
        sys.exit(f"performance: {' and '.join(stale)} {'differs' if len(stale) == 1 else 'differ'} from what "
                 "docs/performance.json gives; run python3 Benchmarks/performance.py --render")
    print("performance: docs/PERFORMANCE.md and docs/performance.svg match docs/performance.json")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--render", action="store_true", help="render from docs/performance.json; run nothing")
    mode.add_argument("--check", action="store_true", help="exit 1 if the rendered files differ from the JSON's")
    parser.add_argument("--runs", type=int, default=DEFAULT_RUNS, help="runs of every workload (default %(default)s)")
    parser.add_argument("--workloads", default=DEFAULT_WORKLOADS,
                        help="passed to compare.py (default %(default)s: the three-engine comparison; the "
                             "table shows W1-W6 figures, so BlobCache-only extras such as w3codecs and readers "
                             "are kept in the JSON but not shown)")
    parser.add_argument("--corpus", default=DEFAULT_CORPUS, help="passed to compare.py (default %(default)s)")
    args = parser.parse_args()
    if args.check:
        check()
    elif args.render:
        try:
            render_files(load())
        except (OSError, ValueError, KeyError, TypeError) as error:
            sys.exit(f"performance: cannot render docs/performance.json ({error})")
        print("performance: wrote docs/PERFORMANCE.md and docs/performance.svg", file=sys.stderr)
    else:
        if args.runs < 1:
            parser.error("--runs must be at least 1")
        run(args)


if __name__ == "__main__":
    main()
