#!/usr/bin/env python3
"""The remote tier and `blobcache serve`, measured against nginx on loopback.

    python3 Benchmarks/remote.py tier   [--corpus DIR]
    python3 Benchmarks/remote.py serve  [--corpus DIR] [--seconds 8] [--rounds 3]

tier   starts nginx (WebDAV PUT) on a free loopback port and runs the workload runner's
       `remote` workload against it: W2 and W3 put through the tier, then got from fresh
       directories, every get a remote hit (two GETs: key record, then blob). Then wrk GETs the
       same blob files from nginx over one connection (the tier's gets are sequential: one
       connection too), 3 rounds, median.
serve  starts nginx serving 4 KiB and 1 MiB bodies as static files and `blobcache serve`
       holding the same bodies under the same paths; wrk (2 threads, 16 connections) GETs them,
       then PUTs new ones (each body made unique, so dedup cannot help), rounds interleaved;
       medians and the ratio serve / nginx.

Needs nginx and wrk (apt-get install -y nginx wrk), the corpus (Benchmarks/corpus/make_corpus.py,
built when missing) and release builds, which it makes (swift build -c release). Prints a table
and one JSON line.
"""
import argparse, json, os, re, shutil, socket, statistics, subprocess, sys, tempfile, time, http.client

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WRK = os.path.join(ROOT, "Benchmarks", "wrk")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_port(port, process):
    deadline = time.time() + 20
    while time.time() < deadline:
        if process.poll() is not None:
            sys.exit(f"remote.py: server exited with {process.returncode}")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.01)  # polling for the port to accept
    sys.exit("remote.py: server did not start")


def start_nginx(folder):
    port = free_port()
    os.makedirs(f"{folder}/root", exist_ok=True)
    with open(f"{folder}/nginx.conf", "w") as f:
        # One worker per core, as nginx's `auto` does (as root, workers stay root to read the
        # temporary folder this script made).
        user = "user root;" if os.geteuid() == 0 else ""
        f.write(f"""daemon off; {user} worker_processes auto; pid {folder}/nginx.pid;
error_log {folder}/error.log warn;
events {{ worker_connections 1024; }}
http {{ access_log off; sendfile on; tcp_nopush on; keepalive_requests 1000000;
  client_body_temp_path {folder}/body; proxy_temp_path {folder}/proxy; fastcgi_temp_path {folder}/fcgi;
  uwsgi_temp_path {folder}/uwsgi; scgi_temp_path {folder}/scgi;
  server {{ listen 127.0.0.1:{port}; root {folder}/root; client_max_body_size 0;
    location / {{ dav_methods PUT DELETE; create_full_put_path on; }} }} }}
""")
    process = subprocess.Popen(["nginx", "-c", f"{folder}/nginx.conf", "-p", folder, "-e", f"{folder}/error.log"])
    wait_for_port(port, process)
    return process, port


def stop_nginx(process):
    """Stops nginx and its workers: SIGTERM to the master, which takes its workers down with it
    (a SIGKILL would orphan the workers, and they would keep the port and this script's output)."""
    process.terminate()
    process.wait(timeout=30)


def start_serve(tool, folder):
    process = subprocess.Popen([tool, "serve", "--listen", "127.0.0.1:0", "--dir", f"{folder}/cache"],
                               stdout=subprocess.PIPE, text=True)
    line = process.stdout.readline()
    match = re.search(r"listening on http://[^:]+:(\d+)", line)
    if not match:
        sys.exit(f"remote.py: blobcache serve said: {line!r}")
    return process, int(match.group(1))


def wrk(port, script, args, connections, threads, seconds):
    run = subprocess.run(["wrk", "-t", str(threads), "-c", str(connections), "-d", f"{seconds}s", "-s", script,
                          f"http://127.0.0.1:{port}", "--"] + args, capture_output=True, text=True)
    out = run.stdout
    if run.returncode != 0:
        sys.exit(f"remote.py: wrk failed:\n{run.stdout}{run.stderr}")
    if "Non-2xx" in out or "Socket errors" in out:
        sys.exit(f"remote.py: wrk saw failures:\n{out}")
    return float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))


def blobs(corpus, name, size, count):
    with open(f"{corpus}/{name}", "rb") as f:
        return [f.read(size) for _ in range(count)]


def build():
    subprocess.run(["swift", "build", "-c", "release", "--product", "blobcache"], cwd=ROOT, check=True,
                   stdout=subprocess.DEVNULL)
    subprocess.run(["swift", "build", "-c", "release", "--product", "workload"], cwd=f"{ROOT}/Benchmarks", check=True,
                   stdout=subprocess.DEVNULL)


def tier(options, work):
    nginx, port = start_nginx(f"{work}/nginx")
    try:
        out = subprocess.run([f"{ROOT}/Benchmarks/.build/release/workload", "--workloads", "remote", "--corpus", options.corpus,
                              "--work", f"{work}/runner", "--keep-work", "--remote", f"http://127.0.0.1:{port}/tier"],
                             capture_output=True, text=True, check=True).stdout
        measured = json.loads(out.strip().splitlines()[-1])["results"]
        rows = []
        for name in ("W2", "W3"):
            nginx_rates = [wrk(port, f"{WRK}/get.lua", [f"{work}/runner/{name}.paths"], 1, 1, options.seconds)
                           for _ in range(options.rounds)]
            rate = statistics.median(nginx_rates)
            for m in measured:
                if m["workload"].startswith(name + "."):
                    rows.append((m["workload"], m["opsPerSecond"], m["opsPerSecond"] / rate))
            rows.append((f"{name}.nginx.get (wrk -c1)", rate, 1.0))
        return rows
    finally:
        stop_nginx(nginx)


def serve(options, work):
    tool = f"{ROOT}/.build/release/blobcache"
    nginx, nginx_port = start_nginx(f"{work}/nginx")
    server, serve_port = start_serve(tool, f"{work}/serve")
    rows = []
    try:
        sets = [("4k", "synth_4k.bin", 4096, 1000), ("1m", "synth_1m.bin", 1 << 20, 64)]
        for label, name, size, count in sets:
            bodies = blobs(options.corpus, name, size, count)
            paths = [f"/g{label}/{i}" for i in range(count)]
            connection = http.client.HTTPConnection("127.0.0.1", serve_port)
            for path, body in zip(paths, bodies):
                os.makedirs(os.path.dirname(f"{work}/nginx/root{path}"), exist_ok=True)
                with open(f"{work}/nginx/root{path}", "wb") as f:
                    f.write(body)
                connection.request("PUT", path, body)
                response = connection.getresponse()
                response.read()
                assert response.status // 100 == 2, response.status
            connection.close()
            with open(f"{work}/{label}.paths", "w") as f:
                f.write("\n".join(paths))
            with open(f"{work}/{label}.body", "wb") as f:
                f.write(bodies[0])
            for method in ("GET", "PUT"):
                serve_rates, nginx_rates = [], []
                for round in range(options.rounds):
                    for port, rates, who in ((nginx_port, nginx_rates, "n"), (serve_port, serve_rates, "s")):
                        if method == "GET":
                            rates.append(wrk(port, f"{WRK}/get.lua", [f"{work}/{label}.paths"], 16, 2, options.seconds))
                        else:
                            rates.append(wrk(port, f"{WRK}/put.lua", [f"{work}/{label}.body", f"/p{label}/{who}{round}-"],
                                             16, 2, options.seconds))
                s, n = statistics.median(serve_rates), statistics.median(nginx_rates)
                rows.append((f"serve.{method}.{label}", s, s / n))
                rows.append((f"nginx.{method}.{label}", n, 1.0))
        return rows
    finally:
        server.terminate()
        server.wait()
        stop_nginx(nginx)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("what", choices=["tier", "serve"])
    parser.add_argument("--corpus", default="/tmp/blobcorpus")
    parser.add_argument("--seconds", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=3)
    options = parser.parse_args()
    for program in ("nginx", "wrk"):
        if shutil.which(program) is None and not os.path.exists(f"/usr/sbin/{program}"):
            sys.exit(f"remote.py: {program} is missing; run as root: apt-get install -y nginx wrk")
    os.environ["PATH"] += ":/usr/sbin"
    if not os.path.exists(os.path.join(options.corpus, "w5_trace.tsv")):
        subprocess.run([sys.executable, os.path.join(ROOT, "Benchmarks", "corpus", "make_corpus.py"),
                        "--out", options.corpus], check=True)
    build()
    work = tempfile.mkdtemp(prefix="blobcache-remote-bench-")
    try:
        rows = tier(options, work) if options.what == "tier" else serve(options, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"{'measure':34} {'ops/s':>12} {'vs nginx':>9}")
    for name, rate, ratio in rows:
        print(f"{name:34} {rate:12,.0f} {ratio:9.2f}")
    print(json.dumps([{"measure": n, "opsPerSecond": r, "ratioToNginx": q} for n, r, q in rows]))


if __name__ == "__main__":
    main()
