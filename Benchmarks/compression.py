#!/usr/bin/env python3
"""What each compression preset costs and gives: W1 (the corpus's real files) and W3 (1,000
values of 1 MiB) under the default (adaptive) and balanced, fastReads and off, with the bytes
each stores, and W3 gets against python-diskcache's in the same run.

Each run replays the Swift runner's `presets` workload (PRESETS picks the presets) and
diskcache's W3, in alternating order; figures are medians of the runs (min–max), ⚑ where the
spread exceeds 30% of the median. The ratio to diskcache is given of the medians and in each run.

    python3 Benchmarks/compression.py                      # 3 runs of the four presets
    python3 Benchmarks/compression.py --runs 1 --json /tmp/compression.json
    python3 Benchmarks/compression.py --presets adaptive,balanced,fastReads,smallest,off
    python3 Benchmarks/compression.py --from-json /tmp/compression.json   # the table again

The building blocks (prerequisites, corpus, runner, diskcache's W3) are Benchmarks/compare.py's;
`render_markdown(data)` gives the tables for a document from what `--json` saved.
"""
import argparse
import json
import os
import statistics
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compare  # noqa: E402

DEFAULT_PRESETS = ["adaptive", "balanced", "fastReads", "off"]
DEFAULT = "adaptive"


def measure(runs, corpus, presets):
    """Runs the presets workload and diskcache's W3 `runs` times; returns the saved document."""
    compare.check_prerequisites(["blobcache", "diskcache"])
    compare.ensure_diskcache()
    runner = compare.build_runner()
    compare.ensure_corpus(corpus)
    os.environ["PRESETS"] = ",".join(presets)
    samples = {"blobcache": [], "diskcache": []}
    with tempfile.TemporaryDirectory(prefix="blobcache-compression-") as work:
        for run in range(runs):
            order = ["blobcache", "diskcache"] if run % 2 == 0 else ["diskcache", "blobcache"]
            for engine in order:
                print(f"compression: run {run + 1}/{runs}: {engine}", file=sys.stderr)
                if engine == "diskcache":
                    samples[engine].append(compare.run_diskcache(corpus, ["w3"], work, 1))
                else:
                    samples[engine].append(compare.run_swift(runner, "blobcache", corpus, ["presets"], work, 1))
    return {"runs": runs, "presets": presets, "default": DEFAULT, "corpus": corpus_identity(corpus), "samples": samples}


def corpus_identity(corpus):
    """The corpus's manifest MD5, files and bytes (stats.json), so figures are compared only on the same one."""
    try:
        with open(os.path.join(corpus, "stats.json")) as f:
            stats = json.load(f)
    except (OSError, ValueError):
        return {"path": corpus}
    return {"path": corpus, "manifest_md5": stats.get("manifest_md5"), "files": stats.get("files"),
            "bytes": stats.get("total_bytes")}


def values(data, engine, workload, metric):
    """The metric of `workload` in each run of `engine`, in run order."""
    found = []
    for results in data["samples"].get(engine, []):
        found += [r[metric] for r in results if r["workload"] == workload and metric in r]
    return found


def per_run_ratios(a, b):
    return [x / y for x, y in zip(a, b)] if a and b and len(a) == len(b) else []


def stored(data, workload):
    """Median stored MiB and the share of the value bytes, as one cell."""
    kept, logical = values(data, "blobcache", f"{workload}.put", "storedBytes"), values(data, "blobcache", f"{workload}.put", "bytes")
    if not kept or not logical:
        return "—"
    return f"{statistics.median(kept) / 2**20:,.0f} MiB ({statistics.median(kept) / statistics.median(logical):.0%})"


def name(data, preset):
    return f"`{preset}` (default)" if preset == data.get("default") else f"`{preset}`"


def render_markdown(data):
    """The W3 and W1 tables, and whether W3 gets under the default beat diskcache in every run."""
    runs, presets = data["runs"], data["presets"]
    disk_get = values(data, "diskcache", "W3.get", "megabytesPerSecond")
    lines = [f"Medians of {runs} run{'s' if runs != 1 else ''} (min–max); stored = bytes on disk of the values "
             "(share of their own size); ratios > 1 favour BlobCache.", "",
             "W3, 1,000 values of 1 MiB:", "",
             "| preset | stored | put MB/s | get MB/s | get vs diskcache | in each run |", "|---|---|---|---|---|---|"]
    for preset in presets:
        gets = values(data, "blobcache", f"W3.{preset}.get", "megabytesPerSecond")
        each = per_run_ratios(gets, disk_get)
        vs = f"{statistics.median(gets) / statistics.median(disk_get):.2f}×" if gets and disk_get else "—"
        lines.append(f"| {name(data, preset)} | {stored(data, f'W3.{preset}')} | "
                     f"{compare.fmt(values(data, 'blobcache', f'W3.{preset}.put', 'megabytesPerSecond'))} | "
                     f"{compare.fmt(gets)} | {vs} | {', '.join(f'{r:.2f}' for r in each) or '—'} |")
    lines.append(f"| python-diskcache | — | {compare.fmt(values(data, 'diskcache', 'W3.put', 'megabytesPerSecond'))} | "
                 f"{compare.fmt(disk_get)} | 1.00× | — |")
    lines += ["", "W1, the corpus's files (puts and gets per second):", "",
              "| preset | stored | put ops/s | put MB/s | get ops/s | get MB/s |", "|---|---|---|---|---|---|"]
    for preset in presets:
        cells = [compare.fmt(values(data, "blobcache", f"W1.{preset}.{phase}", metric))
                 for phase in ("put", "get") for metric in ("opsPerSecond", "megabytesPerSecond")]
        lines.append(f"| {name(data, preset)} | {stored(data, f'W1.{preset}')} | " + " | ".join(cells) + " |")
    default = data.get("default")
    each = per_run_ratios(values(data, "blobcache", f"W3.{default}.get", "megabytesPerSecond"), disk_get)
    if each:
        verdict = "at least" if min(each) >= 1 else "NOT at least"
        lines += ["", f"W3 get under `{default}` was {verdict} python-diskcache's in every run "
                      f"(lowest {min(each):.2f}×)."]
    noisy = [f"{w} {m}" for w, m in noisy_figures(data)]
    if noisy:
        lines += ["", f"⚑ spread over {compare.SPREAD_LIMIT:.0%} of the median: " + "; ".join(noisy) + "."]
    corpus = data.get("corpus", {})
    if corpus.get("manifest_md5"):
        lines += ["", f"Corpus manifest MD5 `{corpus['manifest_md5']}`."]
    return "\n".join(lines) + "\n"


def noisy_figures(data):
    checked = [("diskcache", "W3.get", "megabytesPerSecond"), ("diskcache", "W3.put", "megabytesPerSecond")]
    for preset in data["presets"]:
        for workload in ("W1", "W3"):
            for phase in ("put", "get"):
                checked.append(("blobcache", f"{workload}.{preset}.{phase}", "megabytesPerSecond"))
    for engine, workload, metric in checked:
        if compare.flagged(values(data, engine, workload, metric)):
            yield f"{engine} {workload}", compare.UNITS[metric]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--corpus", default="/tmp/blobcorpus")
    parser.add_argument("--presets", default=",".join(DEFAULT_PRESETS),
                        help="comma-separated presets, as the runner spells them (default: %(default)s)")
    parser.add_argument("--json", help="also write the samples and settings to this file")
    parser.add_argument("--from-json", help="print the tables from a saved --json file; runs nothing")
    args = parser.parse_args()
    try:
        if args.from_json:
            with open(args.from_json) as f:
                data = json.load(f)
        else:
            data = measure(max(1, args.runs), args.corpus, args.presets.split(","))
            if args.json:
                with open(args.json, "w") as f:
                    json.dump(data, f, indent=1)
    except compare.Failure as failure:
        sys.exit(f"compression: {failure}")
    except OSError as error:
        sys.exit(f"compression: {error}")
    print(render_markdown(data))


if __name__ == "__main__":
    main()
