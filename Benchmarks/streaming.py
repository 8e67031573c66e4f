#!/usr/bin/env python3
"""Values of any size through the command line: peak memory and throughput of `put` and `get`
of a large file against `cp` of the same file on the same disk, and `serve`'s memory under slow
clients.

    swift build -c release --product blobcache
    python3 Benchmarks/streaming.py                      # 4 GiB, random and compressible, 3 runs
    python3 Benchmarks/streaming.py --size 1G --runs 5 --kinds random
    python3 Benchmarks/streaming.py --serve-only

Each run times, one after the other and in an order that alternates run by run: `cp SRC DST`
(coreutils: copy_file_range, the copy stays in the kernel), `dd if=SRC of=DST bs=1M` (a plain
read and write loop, which is what a streaming get must do), `blobcache put big SRC` into a fresh
cache, and `blobcache get big -o OUT`; then `cmp OUT SRC`. Every step starts after a `sync`
(untimed): writing gigabytes, the writeback of the step before would otherwise slow the next.
Peak resident memory is the tool's own (`-v` prints its VmHWM at exit); `cp`'s is GNU time's
when /usr/bin/time exists. Medians, min-max, and put/cp and get/cp ratios of the same runs.
Every file lives in --work (default /tmp/blobcache-streaming), so all on one disk.

`serve`: a 100 MB value read by 12 clients at 1 KiB/s and 6 PUTs of 200 MiB sent at 2 MB/s (curl
--limit-rate), then a 4 KiB GET timed; the server's VmHWM from /proc while they run.
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def size_arg(text):
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(text[:-1]) * units[text[-1].upper()] if text[-1].upper() in units else int(text)


def make_source(path, size, kind, corpus):
    if os.path.exists(path) and os.path.getsize(path) == size:
        return
    with open(path, "wb") as out:
        written = 0
        if kind == "random":
            while written < size:
                chunk = os.urandom(min(8 << 20, size - written))
                out.write(chunk)
                written += len(chunk)
        else:
            # The benchmark corpus's real files, over and over: compressible as real data is.
            block = open(os.path.join(corpus, "concat.bin"), "rb").read(256 << 20)
            while written < size:
                chunk = block[: size - written]
                out.write(chunk)
                written += len(chunk)


def timed(command, **kwargs):
    start = time.perf_counter()
    result = subprocess.run(command, capture_output=True, text=True, **kwargs)
    seconds = time.perf_counter() - start
    if result.returncode != 0:
        sys.exit(f"{' '.join(command)} failed ({result.returncode}): {result.stderr}")
    peak = None
    for line in result.stderr.splitlines():
        if line.startswith("blobcache: debug: peak resident memory "):
            peak = int(line.split()[-2])
        elif line.strip().startswith("Maximum resident set size"):
            peak = int(line.split()[-1]) * 1024
    return seconds, peak


def files(args):
    blobcache = args.blobcache
    work = args.work
    os.makedirs(work, exist_ok=True)
    gnu_time = ["/usr/bin/time", "-v"] if os.path.exists("/usr/bin/time") else []
    print(f"\n{args.size:,} bytes, {args.runs} runs; medians (min-max).\n")
    print("| file | step | seconds | GB/s | peak memory | ratio to cp |")
    print("|---|---|---|---|---|---|")
    for kind in args.kinds.split(","):
        source = os.path.join(work, f"source-{kind}")
        make_source(source, args.size, kind, args.corpus)
        samples = {"cp": [], "dd": [], "put": [], "get": []}
        peaks = {"cp": [], "dd": [], "put": [], "get": []}
        for run in range(args.runs):
            cache = os.path.join(work, "cache")
            out = os.path.join(work, "out")
            copy = os.path.join(work, "copy")
            steps = ["cp", "dd", "put", "get"] if run % 2 == 0 else ["put", "get", "dd", "cp"]
            for step in steps:
                subprocess.run(["sync"], check=True)
                if step == "dd":
                    if os.path.exists(copy):
                        os.remove(copy)
                    seconds, peak = timed(gnu_time + ["dd", "if=" + source, "of=" + copy, "bs=1M", "status=none"])
                elif step == "cp":
                    if os.path.exists(copy):
                        os.remove(copy)
                    seconds, peak = timed(gnu_time + ["cp", source, copy])
                elif step == "put":
                    shutil.rmtree(cache, ignore_errors=True)
                    seconds, peak = timed([blobcache, "-v", "--dir", cache, "put", "big", source])
                else:
                    seconds, peak = timed([blobcache, "-v", "--dir", cache, "get", "big", "-o", out])
                samples[step].append(seconds)
                if peak:
                    peaks[step].append(peak)
            if subprocess.run(["cmp", out, source]).returncode != 0:
                sys.exit("get's output differs from the source")
            os.remove(out)
            print(f"streaming: {kind} run {run + 1}/{args.runs} done", file=sys.stderr, flush=True)
        cp = statistics.median(samples["cp"])
        for step in ("cp", "dd", "put", "get"):
            values = samples[step]
            median = statistics.median(values)
            peak = f"{max(peaks[step]) / (1 << 20):.1f} MiB" if peaks[step] else "-"
            print(f"| {kind} | {step} | {median:.2f} ({min(values):.2f}-{max(values):.2f}) | "
                  f"{args.size / median / 1e9:.2f} | {peak} | {cp / median:.2f} |")


def vmhwm(pid):
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    return None


def serve(args):
    work = args.work
    os.makedirs(work, exist_ok=True)
    cache = os.path.join(work, "serve-cache")
    shutil.rmtree(cache, ignore_errors=True)
    server = subprocess.Popen([args.blobcache, "serve", "--dir", cache, "--listen", "127.0.0.1:0"],
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    url = server.stdout.readline().strip().split()[-1]
    big = os.path.join(work, "serve-big")
    make_source(big, 100_000_000, "random", args.corpus)
    upload = os.path.join(work, "serve-upload")
    with open(upload, "wb") as f:
        f.truncate(200 << 20)
    subprocess.run(["curl", "-sS", "-o", "/dev/null", "-T", big, url + "/big"], check=True)
    with open(os.path.join(work, "small"), "wb") as f:
        f.write(os.urandom(4096))
    subprocess.run(["curl", "-sS", "-o", "/dev/null", "-T", os.path.join(work, "small"), url + "/small"], check=True)
    before = vmhwm(server.pid)
    clients = [subprocess.Popen(["curl", "-sS", "--limit-rate", "1k", "-o", "/dev/null", url + "/big"])
               for _ in range(12)]
    clients += [subprocess.Popen(["curl", "-sS", "--limit-rate", "2M", "-o", "/dev/null", "-T", upload,
                                  url + f"/upload{i}"]) for i in range(6)]
    time.sleep(args.serve_seconds)
    start = time.perf_counter()
    small = subprocess.run(["curl", "-sS", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "10", url + "/small"],
                           capture_output=True, text=True).stdout
    small_seconds = time.perf_counter() - start
    during = vmhwm(server.pid)
    for client in clients:
        client.kill()
        client.wait()
    server.terminate()
    server.wait()
    print(f"\nserve: 12 GETs of a 100 MB value at 1 KiB/s and 6 PUTs of 200 MiB at 2 MB/s for {args.serve_seconds} s:")
    print(f"| server VmHWM before | VmHWM with the slow clients | 4 KiB GET meanwhile |")
    print("|---|---|---|")
    print(f"| {before / (1 << 20):.1f} MiB | {during / (1 << 20):.1f} MiB | {small} in {small_seconds * 1000:.1f} ms |")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--blobcache", default=os.path.join(ROOT, ".build", "release", "blobcache"))
    parser.add_argument("--size", type=size_arg, default=4 << 30)
    parser.add_argument("--kinds", default="random,compressible")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--corpus", default="/tmp/blobcorpus")
    parser.add_argument("--work", default="/tmp/blobcache-streaming")
    parser.add_argument("--serve-only", action="store_true")
    parser.add_argument("--serve-seconds", type=int, default=20)
    args = parser.parse_args()
    if not args.serve_only:
        files(args)
    serve(args)


if __name__ == "__main__":
    main()
