#!/usr/bin/env python3
"""`blobcache serve` side by side with nginx on loopback: GET and PUT throughput and tail latency
under wrk, and a 4 KiB GET's latency while idle connections and slowloris clients are held open.

    python3 Benchmarks/serve_vs_nginx.py                         # 10 s per wrk run, 3 runs
    python3 Benchmarks/serve_vs_nginx.py --duration 2 --runs 1   # a quick check
    python3 Benchmarks/serve_vs_nginx.py --only get,idle --blobcache /tmp/blobcache
    python3 Benchmarks/serve_vs_nginx.py --serve-args ''         # a binary without --max-connections

It builds nothing: --blobcache names a release binary (default .build/release/blobcache; make it
with `swift build -c release --product blobcache`). Needs wrk and nginx: as root the script runs
`apt-get install -y wrk nginx` when one is missing; otherwise it prints that command and exits 1.

Both servers hold the same values: 1000 random 4 KiB values and 64 random 1 MiB values, PUT into
`blobcache serve` with http.client (paths /g4k/<i> and /g1m/<i>; the key is the path without its
'/') and written as files under nginx's root at the same paths. Random bytes, so serve's default
LZ4 compression does not make its values smaller than nginx's files.

Workloads (every one run once per server per run; --only picks get, put and idle):
  get   wrk GETs the 4 KiB paths, then the 1 MiB paths, in turn, at 1 and 64 connections
        (Benchmarks/wrk/serve_vs_nginx.lua `get`): requests/s, bytes/s (what wrk read, headers
        included) and latency percentiles from wrk's own histogram (the script's done() prints
        them as JSON).
  put   wrk PUTs 4 KiB and 1 MiB bodies at 1 and 64 connections (Benchmarks/wrk/serve_vs_nginx.lua
        `put`): requests/s, latency, and for 1 MiB the body bytes sent per second. Each body is
        made unique in its first 16 bytes, and goes to /p4k-<server>/<k> or /p1m-<server>/<k>,
        k going round 1000 keys (--put-keys) so neither store grows without bound: every PUT
        after the first 1000 replaces a value.
  idle  --idle connections (2000) opened with Python sockets and held open sending nothing, plus
        --slowloris clients (10), each sending a request line and Host header and then one byte
        of a header that never ends every second; after --settle seconds, --idle-gets (200)
        sequential 4 KiB GETs, each on a fresh http.client connection (so each one must also be
        accepted while the others are held), timed with time.perf_counter. A failed or timed
        out GET counts as --idle-timeout seconds and as an error. The same 200 GETs with nothing
        else connected ("quiet") come first, for reference. Also reported: how many of the
        idle connections the server still held at the end, how many still sat in its listen
        backlog, not accepted, when the timed GETs began (from /proc/net/tcp), and how many
        slowloris clients it closed (each one closed is reopened). Opening the idle connections
        gives up after 30 s or 3 failed connects in a row.

wrk runs with --threads threads (2; at most the connection count), --timeout 10s, after a
--warmup second (1) run of the same load that is not recorded. A run with non-2xx answers stops
the script; socket errors are reported beside the figures.

One server is up at a time: for every workload of every run, nginx is started, measured and
stopped, then serve (the order swaps from one workload to the next and from run to run), so
noise hits both; the values stay on disk between starts (nginx's root, serve's --dir). Medians
over --runs (3) runs; ratios are serve / nginx of those medians (req/s and bytes/s: higher is
better for serve; p99: lower is better). On two cores wrk, Python and the server share them.

nginx (the Debian package's binary, started as a non-daemon child of this script with its own
conf, pid, error log and temp paths in a temporary folder):

    daemon off; worker_processes 2; worker_rlimit_nofile 65536;   (+ `user root;` as root: the
    events { worker_connections 16384; }                              workers then read the
    http { access_log off; sendfile on; tcp_nopush on;                 0700 temp folder)
      keepalive_requests 1000000;
      server { listen 127.0.0.1:PORT backlog=4096; root ROOT; client_max_body_size 0;
        location / { dav_methods PUT DELETE; create_full_put_path on; } } }

(client_max_body_size 0: no limit; nginx's default timeouts: 60 s to read a request header, 75 s
for an idle keep-alive connection.) `blobcache serve --dir DIR --listen 127.0.0.1:0` gets
--serve-args too ('--max-connections 4096' by default; pass --serve-args '' for a binary without
that flag). RLIMIT_NOFILE is raised (to 65536 where the hard limit allows) for this script and
for both servers.

Targets, each marked PASS or FAIL:
  GET 4 KiB at 64 connections: serve >= 0.7x nginx's requests/s and serve's p99 <= 2x nginx's.
  GET 1 MiB (at 1 and at 64 connections): serve >= 0.8x nginx's bytes/s.
  idle + slowloris: serve's 4 KiB GET p99 <= 100 ms (and no GET failed).

Prints Markdown tables and the targets; writes every sample, the medians and the targets to
--json (default Benchmarks/serve_vs_nginx.json).
"""
import argparse
import http.client
import json
import math
import os
import re
import resource
import shlex
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
LUA = os.path.join(HERE, "wrk", "serve_vs_nginx.lua")
NOFILE = 65536
SIZES = {"4k": (4096, 1000, "4 KiB"), "1m": (1 << 20, 64, "1 MiB")}
CONNECTIONS = (1, 64)


def say(text):
    print(f"serve_vs_nginx: {text}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------- setup

def raise_nofile():
    """Raises RLIMIT_NOFILE to NOFILE (both limits as root, the soft one up to the hard one
    otherwise). Used for this script and, as preexec_fn, for the servers."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    unlimited = hard == resource.RLIM_INFINITY
    for limits in ((max(NOFILE, soft), hard if unlimited or hard >= NOFILE else NOFILE),
                   (min(NOFILE, hard) if not unlimited else NOFILE, hard)):
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, limits)
            return
        except (ValueError, OSError):
            continue


def find_program(name):
    return shutil.which(name) or next((p for p in (f"/usr/sbin/{name}", f"/usr/bin/{name}") if os.path.exists(p)), None)


def ensure_tools():
    missing = [name for name in ("wrk", "nginx") if find_program(name) is None]
    if not missing:
        return find_program("wrk"), find_program("nginx")
    command = ["apt-get", "install", "-y", "wrk", "nginx"]
    if os.geteuid() != 0:
        sys.exit(f"serve_vs_nginx: {' and '.join(missing)} missing; install with:\n"
                 f"    sudo {' '.join(command)}")
    say(f"{' and '.join(missing)} missing; running {' '.join(command)}")
    environment = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    if subprocess.run(command, env=environment).returncode != 0:
        subprocess.run(["apt-get", "update"], env=environment, check=True)
        subprocess.run(command, env=environment, check=True)
    if any(find_program(name) is None for name in ("wrk", "nginx")):
        sys.exit("serve_vs_nginx: wrk or nginx still missing after apt-get install")
    return find_program("wrk"), find_program("nginx")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# ---------------------------------------------------------------- servers

class Server:
    """One server up at a time: start(), then .port, then stop()."""
    name = ""

    def __init__(self, work):
        self.work = work
        self.process = None
        self.port = None
        self.log = os.path.join(work, f"{self.name}.log")

    def stop(self):
        if self.process is None:
            return
        # SIGTERM: nginx's master takes its workers down with it (a SIGKILL would orphan them);
        # serve finishes the requests in flight and exits 0.
        self.process.terminate()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.process = None

    def wait_for_port(self):
        deadline = time.time() + 20
        while time.time() < deadline:
            if self.process.poll() is not None:
                sys.exit(f"serve_vs_nginx: {self.name} exited with {self.process.returncode}:\n{self.tail()}")
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", self.port)) == 0:
                    return
            time.sleep(0.01)  # polling for the port to accept
        sys.exit(f"serve_vs_nginx: {self.name} did not start:\n{self.tail()}")

    def tail(self):
        try:
            with open(self.log, errors="replace") as f:
                return "".join(f.readlines()[-20:])
        except OSError:
            return ""


class Nginx(Server):
    name = "nginx"

    def __init__(self, work, program):
        super().__init__(work)
        self.program = program
        self.folder = os.path.join(work, "nginx")
        self.root = os.path.join(self.folder, "root")
        for sub in ("root", "body", "proxy", "fcgi", "uwsgi", "scgi"):
            os.makedirs(os.path.join(self.folder, sub), exist_ok=True)

    def config(self, port):
        folder = self.folder
        # As root, workers would otherwise switch to nobody and could not read the 0700 folder.
        user = "user root;\n" if os.geteuid() == 0 else ""
        return f"""daemon off;
{user}worker_processes 2;
worker_rlimit_nofile {NOFILE};
pid {folder}/nginx.pid;
error_log {self.log} warn;
events {{ worker_connections 16384; }}
http {{
  access_log off; sendfile on; tcp_nopush on; keepalive_requests 1000000;
  client_body_temp_path {folder}/body; proxy_temp_path {folder}/proxy; fastcgi_temp_path {folder}/fcgi;
  uwsgi_temp_path {folder}/uwsgi; scgi_temp_path {folder}/scgi;
  server {{
    listen 127.0.0.1:{port} backlog=4096; root {self.root}; client_max_body_size 0;
    location / {{ dav_methods PUT DELETE; create_full_put_path on; }}
  }}
}}
"""

    def start(self):
        self.port = free_port()
        conf = os.path.join(self.folder, "nginx.conf")
        with open(conf, "w") as f:
            f.write(self.config(self.port))
        with open(self.log, "a") as log:
            self.process = subprocess.Popen([self.program, "-c", conf, "-p", self.folder + "/", "-e", self.log],
                                            stdout=log, stderr=log, preexec_fn=raise_nofile)
        self.wait_for_port()

    def populate(self, path, body):
        target = self.root + path
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with open(target, "wb") as f:
            f.write(body)


class Serve(Server):
    name = "serve"

    def __init__(self, work, program, extra):
        super().__init__(work)
        self.program = program
        self.extra = extra
        self.cache = os.path.join(work, "serve-cache")

    def start(self):
        command = [self.program, "serve", "--dir", self.cache, "--listen", "127.0.0.1:0"] + self.extra
        with open(self.log, "a") as log:
            self.process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=log, text=True,
                                            preexec_fn=raise_nofile)
        line = self.process.stdout.readline()
        match = re.search(r"listening on http://[^\s:]+:(\d+)", line)
        if not match:
            self.process.wait()
            hint = ""
            if self.process.returncode == 64 and self.extra:
                hint = f"\n(exit 64, usage: does this binary take --serve-args {shlex.join(self.extra)!r}? try --serve-args '')"
            sys.exit(f"serve_vs_nginx: `{shlex.join(command)}` said {line!r}, exit {self.process.returncode}:\n"
                     f"{self.tail()}{hint}")
        self.port = int(match.group(1))
        # Nothing more is expected on stdout, but a full pipe must never block the server.
        threading.Thread(target=self.process.stdout.read, daemon=True).start()
        self.wait_for_port()


def put_all(port, items):
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    for path, body in items:
        connection.request("PUT", path, body)
        response = connection.getresponse()
        response.read()
        if response.status not in (200, 201, 204):
            sys.exit(f"serve_vs_nginx: PUT {path} answered {response.status}")
    connection.close()


def check_get(port, path, body):
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    connection.request("GET", path)
    response = connection.getresponse()
    got = response.read()
    connection.close()
    if response.status != 200 or got != body:
        sys.exit(f"serve_vs_nginx: GET {path} on port {port} answered {response.status}, "
                 f"{len(got)} bytes (expected 200, {len(body)} bytes)")


# ---------------------------------------------------------------- wrk

def run_wrk(wrk, port, args, connections, threads, seconds):
    threads = max(1, min(threads, connections))
    command = [wrk, "-t", str(threads), "-c", str(connections), "-d", f"{seconds}s", "--timeout", "10s",
               "-s", LUA, f"http://127.0.0.1:{port}", "--"] + args(threads)
    run = subprocess.run(command, capture_output=True, text=True)
    lines = [line for line in run.stdout.splitlines() if line.startswith("JSON ")]
    if run.returncode != 0 or not lines:
        sys.exit(f"serve_vs_nginx: wrk failed ({run.returncode}): {shlex.join(command)}\n{run.stdout}{run.stderr}")
    result = json.loads(lines[-1][5:])
    if result["errors"]["status"]:
        sys.exit(f"serve_vs_nginx: wrk saw {result['errors']['status']} non-2xx answers: {shlex.join(command)}\n{run.stdout}")
    seconds = result["duration_us"] / 1e6
    return {
        "requests_per_second": result["requests"] / seconds,
        "bytes_per_second": result["bytes"] / seconds,
        "requests": result["requests"],
        "latency_ms": {k: v / 1000 for k, v in result["latency_us"].items()},
        "errors": result["errors"],
        "threads": threads,
    }


# ---------------------------------------------------------------- idle + slowloris

def open_idle(port, count):
    """Up to count connections that send nothing; gives up after 30 s or 3 failed connects in a
    row (a server that stops accepting fills its listen backlog, and then connects hang)."""
    sockets, failures, deadline = [], 0, time.monotonic() + 30
    while len(sockets) < count and failures < 3 and time.monotonic() < deadline:
        s = socket.socket()
        s.settimeout(3)
        try:
            s.connect(("127.0.0.1", port))
        except OSError:
            s.close()
            failures += 1
            continue
        failures = 0
        s.setblocking(False)
        sockets.append(s)
    return sockets


def unaccepted(port):
    """Connections waiting in the listen backlog of 127.0.0.1:port, not yet accepted by the
    server (the rx_queue of its LISTEN sockets in /proc/net/tcp)."""
    waiting = 0
    try:
        with open("/proc/net/tcp") as f:
            next(f)
            for line in f:
                fields = line.split()
                if fields[3] == "0A" and int(fields[1].split(":")[1], 16) == port:
                    waiting += int(fields[4].split(":")[1], 16)
    except OSError:
        return -1
    return waiting


def still_open(s):
    """True while the server has not closed (or reset) the connection."""
    try:
        data = s.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT)
        return data != b""  # b"": closed; bytes: the server answered something (e.g. 408), still open
    except BlockingIOError:
        return True
    except OSError:
        return False


class Slowloris:
    """count clients, each: a request line and Host header at once, then one byte of a header
    that never ends every `every` seconds. A client the server closes is reopened."""

    def __init__(self, port, count, every=1.0):
        self.port, self.count, self.every = port, count, every
        self.stop_event = threading.Event()
        self.closed = 0
        self.sockets = [self.open() for _ in range(count)]
        self.thread = threading.Thread(target=self.loop, daemon=True)
        self.thread.start()

    def open(self):
        s = socket.create_connection(("127.0.0.1", self.port), timeout=10)
        s.sendall(b"GET /g4k/0 HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slowloris: ")
        s.setblocking(False)  # still_open() and the one-byte sends must never wait
        return s

    def loop(self):
        while not self.stop_event.wait(self.every):
            for i, s in enumerate(self.sockets):
                try:
                    if not still_open(s):
                        raise OSError("closed")
                    s.send(b"a")
                except BlockingIOError:
                    pass  # the send buffer is full: the server reads nothing, which is its right
                except OSError:
                    self.closed += 1
                    s.close()
                    try:
                        self.sockets[i] = self.open()
                    except OSError:
                        pass

    def stop(self):
        self.stop_event.set()
        self.thread.join()
        for s in self.sockets:
            s.close()


def timed_gets(port, path, size, count, timeout):
    latencies, errors = [], 0
    for _ in range(count):
        start = time.perf_counter()
        try:
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
            connection.request("GET", path)
            response = connection.getresponse()
            body = response.read()
            connection.close()
            ok = response.status == 200 and len(body) == size
        except (OSError, http.client.HTTPException):
            ok = False
        seconds = time.perf_counter() - start
        if not ok:
            errors += 1
            seconds = max(seconds, timeout)
        latencies.append(seconds * 1000)
    return latencies, errors


def percentile(values, p):
    """Nearest rank."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(p / 100 * len(ordered)) - 1))]


def idle_measure(server, options):
    size = SIZES["4k"][0]
    quiet, quiet_errors = timed_gets(server.port, "/g4k/1", size, options.idle_gets, options.idle_timeout)
    idle = open_idle(server.port, options.idle)
    slow = Slowloris(server.port, options.slowloris)
    time.sleep(options.settle)
    backlog = unaccepted(server.port)
    loaded, loaded_errors = timed_gets(server.port, "/g4k/1", size, options.idle_gets, options.idle_timeout)
    held = sum(still_open(s) for s in idle)
    slow.stop()
    for s in idle:
        s.close()
    return {
        "quiet": {"p50_ms": percentile(quiet, 50), "p99_ms": percentile(quiet, 99), "max_ms": max(quiet),
                  "errors": quiet_errors},
        "loaded": {"p50_ms": percentile(loaded, 50), "p99_ms": percentile(loaded, 99), "max_ms": max(loaded),
                   "errors": loaded_errors, "latencies_ms": loaded},
        "idle_opened": len(idle), "idle_held_at_end": held, "unaccepted": backlog, "slowloris_closed": slow.closed,
    }


# ---------------------------------------------------------------- the runs

def workloads(only):
    items = []
    if "get" in only:
        items += [("get", label, c) for label in SIZES for c in CONNECTIONS]
    if "put" in only:
        items += [("put", label, c) for label in SIZES for c in CONNECTIONS]
    if "idle" in only:
        items.append(("idle", "4k", None))
    return items


def name_of(kind, label, connections):
    return f"{kind}-{label}" + (f"-c{connections}" if connections else "")


def measure(kind, label, connections, server, wrk, files, options):
    if kind == "idle":
        return idle_measure(server, options)
    if kind == "get":
        args = lambda threads: ["get", files[f"paths-{label}"]]
    else:
        prefix = f"/p{label}-{server.name}/"
        args = lambda threads: ["put", files[f"body-{label}"], prefix, str(options.put_keys), str(threads)]
    if options.warmup > 0:
        run_wrk(wrk, server.port, args, connections, options.threads, options.warmup)
    result = run_wrk(wrk, server.port, args, connections, options.threads, options.duration)
    result["body_bytes_per_second"] = result["requests_per_second"] * SIZES[label][0]
    return result


def populate(servers, work):
    files = {}
    for label, (size, count, _) in SIZES.items():
        items = [(f"/g{label}/{i}", os.urandom(size)) for i in range(count)]
        files[f"paths-{label}"] = os.path.join(work, f"paths-{label}")
        with open(files[f"paths-{label}"], "w") as f:
            f.write("\n".join(path for path, _ in items) + "\n")
        files[f"body-{label}"] = os.path.join(work, f"body-{label}")
        with open(files[f"body-{label}"], "wb") as f:
            f.write(os.urandom(size))
        for server in servers:
            server.start()
            try:
                if isinstance(server, Nginx):
                    for path, body in items:
                        server.populate(path, body)
                else:
                    put_all(server.port, items)
                check_get(server.port, items[-1][0], items[-1][1])
            finally:
                server.stop()
    return files


def median_of(samples, key):
    return statistics.median(sample[key] for sample in samples)


def summarize(kind, samples):
    if kind == "idle":
        summary = {}
        for part in ("quiet", "loaded"):
            summary[part] = {k: statistics.median(s[part][k] for s in samples) for k in ("p50_ms", "p99_ms", "max_ms")}
            summary[part]["errors"] = sum(s[part]["errors"] for s in samples)  # over all runs
        summary["idle_opened"] = min(s["idle_opened"] for s in samples)
        summary["idle_held_at_end"] = min(s["idle_held_at_end"] for s in samples)
        summary["unaccepted"] = max(s["unaccepted"] for s in samples)
        summary["slowloris_closed"] = sum(s["slowloris_closed"] for s in samples)
        return summary
    return {
        "requests_per_second": median_of(samples, "requests_per_second"),
        "bytes_per_second": median_of(samples, "bytes_per_second"),
        "body_bytes_per_second": median_of(samples, "body_bytes_per_second"),
        "p50_ms": statistics.median(s["latency_ms"]["p50"] for s in samples),
        "p99_ms": statistics.median(s["latency_ms"]["p99"] for s in samples),
        "socket_errors": sum(sum(v for k, v in s["errors"].items() if k != "status") for s in samples),
    }


def fmt_ms(ms):
    return f"{ms:.2f} ms" if ms < 10 else f"{ms:.1f} ms"


def report(options, medians):
    print(f"\n`blobcache serve` against nginx on loopback: medians of {options.runs} run(s), wrk -t {options.threads} "
          f"(at most the connection count) -d {options.duration}s, servers up one at a time and interleaved. "
          f"Ratios: serve / nginx. MB/s: GET, what wrk read; PUT, the bodies sent.\n")
    rows = [(k, l, c) for (k, l, c) in workloads(options.only) if k != "idle"]
    if rows:
        print("| workload | connections | nginx req/s | serve req/s | ratio | nginx p99 | serve p99 | p99 ratio "
              "| nginx MB/s | serve MB/s | MB/s ratio |")
        print("|---|---|---|---|---|---|---|---|---|---|---|")
        for kind, label, connections in rows:
            n, s = medians[name_of(kind, label, connections)]["nginx"], medians[name_of(kind, label, connections)]["serve"]
            # GET: the bytes wrk read (headers included); PUT: the bodies sent (req/s x size).
            key = "bytes_per_second" if kind == "get" else "body_bytes_per_second"
            mb = ("| - | - | - |" if label != "1m" else
                  f"| {n[key] / 1e6:,.0f} | {s[key] / 1e6:,.0f} | {s[key] / n[key]:.2f} |")
            errors = f" ({n['socket_errors']}/{s['socket_errors']} socket errors)" if n["socket_errors"] or s["socket_errors"] else ""
            print(f"| {kind.upper()} {SIZES[label][2]}{errors} | {connections} | {n['requests_per_second']:,.0f} "
                  f"| {s['requests_per_second']:,.0f} | {s['requests_per_second'] / n['requests_per_second']:.2f} "
                  f"| {fmt_ms(n['p99_ms'])} | {fmt_ms(s['p99_ms'])} | {s['p99_ms'] / max(n['p99_ms'], 1e-3):.2f} {mb}")
    if "idle-4k" in medians:
        print(f"\n4 KiB GETs, {options.idle_gets} sequential, each on a fresh connection: quiet, then with "
              f"{options.idle} idle connections and {options.slowloris} slowloris clients held open.\n")
        print("| server | quiet p50 | quiet p99 | loaded p50 | loaded p99 | loaded max | failed GETs "
              "| idle held at end | not yet accepted | slowloris closed |")
        print("|---|---|---|---|---|---|---|---|---|---|")
        for who in ("nginx", "serve"):
            m = medians["idle-4k"][who]
            print(f"| {who} | {fmt_ms(m['quiet']['p50_ms'])} | {fmt_ms(m['quiet']['p99_ms'])} "
                  f"| {fmt_ms(m['loaded']['p50_ms'])} | {fmt_ms(m['loaded']['p99_ms'])} | {fmt_ms(m['loaded']['max_ms'])} "
                  f"| {m['loaded']['errors'] + m['quiet']['errors']} | {m['idle_held_at_end']}/{m['idle_opened']} "
                  f"| {m['unaccepted']} | {m['slowloris_closed']} |")


def targets(medians):
    results = []

    def add(name, passed, detail):
        results.append({"target": name, "result": "not measured" if passed is None else ("PASS" if passed else "FAIL"),
                        "detail": detail})

    m = medians.get("get-4k-c64")
    if m:
        n, s = m["nginx"], m["serve"]
        rate, p99 = s["requests_per_second"] / n["requests_per_second"], s["p99_ms"] / max(n["p99_ms"], 1e-3)
        add("GET 4 KiB, 64 connections: req/s >= 0.7x nginx", rate >= 0.7, f"{rate:.2f}x")
        add("GET 4 KiB, 64 connections: p99 <= 2x nginx", p99 <= 2.0,
            f"{p99:.2f}x ({fmt_ms(s['p99_ms'])} against {fmt_ms(n['p99_ms'])})")
    else:
        add("GET 4 KiB, 64 connections: req/s >= 0.7x nginx, p99 <= 2x nginx", None, "")
    for connections in CONNECTIONS:
        m = medians.get(f"get-1m-c{connections}")
        name = f"GET 1 MiB, {connections} connection{'s' if connections > 1 else ''}: bytes/s >= 0.8x nginx"
        if m:
            ratio = m["serve"]["bytes_per_second"] / m["nginx"]["bytes_per_second"]
            add(name, ratio >= 0.8, f"{ratio:.2f}x ({m['serve']['bytes_per_second'] / 1e6:,.0f} against "
                                    f"{m['nginx']['bytes_per_second'] / 1e6:,.0f} MB/s)")
        else:
            add(name, None, "")
    m = medians.get("idle-4k")
    name = "idle + slowloris: serve's 4 KiB GET p99 <= 100 ms, none failed"
    if m:
        s = m["serve"]["loaded"]
        add(name, s["p99_ms"] <= 100 and s["errors"] == 0,
            f"{fmt_ms(s['p99_ms'])}, {s['errors']} failed (nginx: {fmt_ms(m['nginx']['loaded']['p99_ms'])})")
    else:
        add(name, None, "")
    print("\nTargets:\n")
    for t in results:
        print(f"- {t['result']}: {t['target']}" + (f" — {t['detail']}" if t["detail"] else ""))
    return results


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--blobcache", default=os.path.join(ROOT, ".build", "release", "blobcache"))
    parser.add_argument("--serve-args", default="--max-connections 4096",
                        help="extra arguments for `blobcache serve` (default: %(default)s; '' for none)")
    parser.add_argument("--duration", type=int, default=10, help="seconds per wrk run (default 10)")
    parser.add_argument("--warmup", type=int, default=1, help="seconds of unrecorded wrk before each run (default 1; 0: none)")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2, help="wrk threads (default 2)")
    parser.add_argument("--only", default="get,put,idle", help="comma-separated: get, put, idle (default all)")
    parser.add_argument("--put-keys", type=int, default=1000, help="keys the PUTs go round (default 1000)")
    parser.add_argument("--idle", type=int, default=2000, help="idle connections held open (default 2000)")
    parser.add_argument("--slowloris", type=int, default=10, help="slowloris clients (default 10)")
    parser.add_argument("--idle-gets", type=int, default=200, help="timed GETs (default 200)")
    parser.add_argument("--idle-timeout", type=float, default=5, help="seconds before a timed GET fails (default 5)")
    parser.add_argument("--settle", type=float, default=2, help="seconds between opening the idle and slowloris "
                        "connections and the timed GETs (default 2)")
    parser.add_argument("--work", help="folder for the servers' data (default: a new temporary folder, removed after)")
    parser.add_argument("--json", default=os.path.join(HERE, "serve_vs_nginx.json"))
    options = parser.parse_args()
    options.only = {w.strip() for w in options.only.split(",") if w.strip()}
    if not options.only or options.only - {"get", "put", "idle"}:
        parser.error("--only takes get, put and idle, comma-separated")
    if not os.access(options.blobcache, os.X_OK):
        sys.exit(f"serve_vs_nginx: no blobcache binary at {options.blobcache} "
                 "(swift build -c release --product blobcache, or --blobcache PATH)")
    wrk, nginx_program = ensure_tools()
    raise_nofile()
    limit = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    if "idle" in options.only and limit != resource.RLIM_INFINITY and limit < options.idle + options.slowloris + 64:
        sys.exit(f"serve_vs_nginx: RLIMIT_NOFILE is {limit}, too few for {options.idle} idle connections")

    work = options.work or tempfile.mkdtemp(prefix="blobcache-serve-vs-nginx-")
    os.makedirs(work, exist_ok=True)
    nginx = Nginx(work, nginx_program)
    serve = Serve(work, os.path.abspath(options.blobcache), shlex.split(options.serve_args))
    servers = [nginx, serve]
    samples = {}
    try:
        say(f"populating both servers in {work}")
        files = populate(servers, work)
        items = workloads(options.only)
        for run in range(options.runs):
            for index, (kind, label, connections) in enumerate(items):
                name = name_of(kind, label, connections)
                # nginx first, then serve, swapping workload by workload and run by run.
                for server in (servers if (run + index) % 2 == 0 else servers[::-1]):
                    server.start()
                    try:
                        sample = measure(kind, label, connections, server, wrk, files, options)
                    finally:
                        server.stop()
                    samples.setdefault(name, {}).setdefault(server.name, []).append(sample)
                    if kind == "idle":
                        figure = f"loaded p99 {fmt_ms(sample['loaded']['p99_ms'])}"
                    else:
                        figure = f"{sample['requests_per_second']:,.0f} req/s, p99 {fmt_ms(sample['latency_ms']['p99'])}"
                    say(f"run {run + 1}/{options.runs} {name} {server.name}: {figure}")
    finally:
        for server in servers:
            server.stop()
        if not options.work:
            shutil.rmtree(work, ignore_errors=True)

    medians = {name: {who: summarize(name.split("-")[0], runs) for who, runs in by_server.items()}
               for name, by_server in samples.items()}
    report(options, medians)
    results = targets(medians)
    with open(options.json, "w") as f:
        json.dump({
            "config": {"blobcache": options.blobcache, "serve_args": options.serve_args, "duration": options.duration,
                       "warmup": options.warmup, "runs": options.runs, "threads": options.threads,
                       "only": sorted(options.only), "put_keys": options.put_keys, "idle": options.idle,
                       "slowloris": options.slowloris, "idle_gets": options.idle_gets,
                       "nginx_conf": nginx.config("PORT"), "nproc": os.cpu_count()},
            "medians": medians, "targets": results, "samples": samples,
        }, f, indent=1)
        f.write("\n")
    print(f"\nwrote {options.json}")


if __name__ == "__main__":
    main()
