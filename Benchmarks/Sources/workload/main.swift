// workload: runs the standard workloads W1–W5 (Benchmarks/corpus/README.md) against BlobCache or
// the raw-filesystem baseline, and prints a table and one JSON line.
//
//   swift run -c release --package-path Benchmarks workload --help
import BlobCache
import Foundation

let usage = """
    USAGE: workload [--engine blobcache|rawfs] [--corpus DIR] [--workloads w1,w2,w3,w4,w5,w6,dedup2,dedup3,w3stream,big,w2mixed,w5nocap]
                    [--workloads remote --remote URL] [--workloads warmup --remote URL]
                    [--codec lz4|zlib|none] [--pack-threshold BYTES] [--w4-runs N]
                    [--files DIR] [--work DIR [--keep-work]] [--cap BYTES] [--latency-puts N]
           workload w4-open CACHE-DIR KEY [--warm]
           workload gets CACHE-DIR [ROUNDS]
           workload opens CACHE-DIR [ROUNDS] [--replay]
           workload replay-open CACHE-DIR

    Replays the standard workloads (Benchmarks/corpus/README.md) and prints a table and one JSON
    line. --files DIR replays W1 over any directory of files; --workloads placement compares
    loose and packed puts; --keep-work leaves the caches in --work DIR for profiling; w4-open
    times one open + get of a kept W4 cache (what W4 runs in a fresh process). For profiling a
    kept cache under perf: gets reads every key ROUNDS times (default 5), opens opens and closes
    it ROUNDS times (default 15; --replay deletes the index snapshot first, so each open replays
    the whole journal); both print a median. --workloads latency fills a cache to a byte cap
    (--cap, default 64 MiB, at least 1 MiB) and times each get of recently written keys on one
    thread, first alone, then while another thread puts --latency-puts new values (default
    20,000) at the cap, so that eviction, pack GC and journal rewrites run; it prints p50–max
    get latency idle and under the writer, the writer's puts/s and the GC runs and rewrites.
    --workloads w2mixed: W2's blobs, 5,000 put untimed, then 50,000 ops timed: every tenth a put
    of a new blob, the others gets of stored ones (Mixed.swift); w5nocap: W5's trace, no cap.
    --workloads w6 runs 1 and then 4 processes on one cache, each 20,000 puts and gets of 4 KiB
    values on shared and private keys, and reports aggregate ops/s (W6.1p, W6.4p).
    --workloads eviction replays W5, W7 (a scan mixed in) and W8 (a shifting working set) under
    each EvictionPolicy at caps of 1/64, 1/32 and 1/16 of the corpus bytes (W7.lru.cap32, ...),
    with hit ratios; python3 Benchmarks/corpus/make_traces.py writes the W7 and W8 traces.
    --workloads w3codecs runs W3 once per codec (none, lz4, zlib-1) as W3.none, W3.lz4 and
    W3.zlib-1, each put row with the bytes stored on disk (storedBytes in the JSON line).
    --workloads presets runs W1 and W3 once per compression preset (adaptive, balanced,
    fastReads, smallest, off) as W1.fastReads, W3.fastReads and so on, put rows with storedBytes;
    --compression PRESET (or fast-reads) runs W1-W5 under one instead of the library's default
    (adaptive); --codec C under that codec for every value (no thresholds).
    --workloads readers times W2 gets (memory tier off) from one thread against two threads on
    one cache: aggregate gets/s, medians of 5 interleaved rounds (W2.get.1t, W2.get.2t;
    READERS_ROUNDS=N for more, as under perf; each round READERS_PASSES=5 passes over the keys).
    --workloads encryption runs W1, W2 and W3 with encryption off and on, interleaved
    (ENCRYPTION_ROUNDS rounds, default 3; medians, each .aes row's note the per-round ratios),
    then W2 and W3 gets alone in closely paired passes from disk (ENCRYPTION_GET_PASSES,
    default 9; W2.get.paired.aes, W3.get.paired.aes), then AES-256-GCM alone on 1 MiB.
    --workloads encryption-gets runs only those paired passes (200 W3 values), in a process
    that has done nothing else.
    --encrypt runs any workload with encryption on.
    --workloads scale: per-op cost of W1-style puts and random-order gets of small distinct
    values at each size in SCALE_SIZES (default 10000,1000000) against the first, in
    SCALE_ROUNDS interleaved rounds (default 3; a small size filled up to 20 times a round); then for each
    size in SCALE_INDEX_SIZES (default 1000000,10000000) the snapshot's bytes, the index's
    resident bytes per entry, a cold open + get (fresh process) and a full replay (records/s).
    --workloads crash-open: for each size in SCALE_CRASH_SIZES (default 1000000), a child puts
    that many 64-byte values into a fresh cache and exits without closing it; a fresh process
    then times the first open (median of 3 such crashes; the records it replayed in the note).
    --workloads remote --remote URL puts W2 and W3 through the remote tier, then gets them from
    fresh directories (every get a remote hit); Benchmarks/remote.sh starts nginx for it and
    measures nginx's own GET rate for the same files with wrk.
    --workloads warmup --remote URL puts 1,000 values of 64 KiB through the remote tier, then
    warms up empty directories from it, on one thread (each get timed) and on 10;
    Benchmarks/remote.py s3 and redis run it beside the plain clients.
    Exit status: 0 done, 2 bad arguments, missing corpus or a failed workload.
    """

struct Options {
    var engine = "blobcache"
    var corpus = "/tmp/blobcorpus"
    var workloads = ["w1", "w2", "w3", "w4", "w5"]
    var codec = Codec.lz4
    /// A compression preset (`--compression`), or the policy of `--codec` alone; `nil`: the
    /// library's default.
    var compression: CompressionPolicy?
    /// What BlobCache stores values with.
    var policy: CompressionPolicy { compression ?? BlobCache.Configuration().compression }
    var packThreshold: Int?
    var w4Runs = 5
    var files: String?
    var work = NSTemporaryDirectory() + "blobcache-workload-\(getpid())"
    /// Leaves the caches in `work` for profiling (`perf record … workload w4-open DIR KEY`).
    var keepWork = false
    /// The byte cap of the latency workload's cache.
    var cap = 64 << 20
    /// Puts the latency workload's writer does while the reader is timed.
    var latencyPuts = 20_000
    /// The remote tier the `remote` workload uses (Benchmarks/remote.sh starts nginx for it).
    var remote: String?
    /// Whether BlobCache runs with encryption at rest (`--encrypt`; a fresh key per run).
    var encrypted = false
    /// Whether puts and gets go through the streaming calls (`StreamingEngine`).
    var streaming = false

    init(_ arguments: [String]) throws {
        var rest = arguments[...]
        func value() throws -> String {
            guard let next = rest.popFirst() else { throw WorkloadError.usage("missing value") }
            return next
        }
        func count(_ name: String, atLeast minimum: Int) throws -> Int {
            let text = try value()
            guard let number = Int(text), number >= minimum else {
                throw WorkloadError.usage("\(name) needs a whole number of at least \(minimum), got \(text)")
            }
            return number
        }
        while let argument = rest.popFirst() {
            switch argument {
            case "--engine": engine = try value()
            case "--corpus": corpus = try value()
            case "--workloads": workloads = try value().lowercased().split(separator: ",").map(String.init)
            case "--codec":
                let name = try value()
                guard let parsed = Codec(name: name) else { throw WorkloadError.usage("unknown codec \(name)") }
                codec = parsed
                compression = CompressionPolicy(codec: parsed)
            case "--compression":
                let name = try value()
                let spelled = name.lowercased().replacingOccurrences(of: "-", with: "")
                guard let preset = CompressionPolicy.presets.first(where: { "\($0)".lowercased() == spelled }) else {
                    throw WorkloadError.usage("unknown compression preset \(name): adaptive, balanced, fastReads, smallest or off")
                }
                compression = preset
            case "--pack-threshold": packThreshold = Int(try value())
            case "--w4-runs": w4Runs = Int(try value()) ?? 5
            case "--files": files = try value()
            case "--work": work = try value()
            case "--keep-work": keepWork = true
            case "--cap": cap = try count("--cap", atLeast: 1 << 20)
            case "--latency-puts": latencyPuts = try count("--latency-puts", atLeast: 1)
            case "--remote": remote = try value()
            case "--encrypt": encrypted = true
            case "--help", "-h":
                print(usage)
                exit(0)
            default: throw WorkloadError.usage("unknown argument \(argument); see --help")
            }
        }
    }
}

/// One measured phase.
struct Measurement: Encodable {
    let workload: String
    let ops: Int
    let seconds: Double
    let bytes: Int
    var hitRatio: Double?
    var indexBytesPerEntry: Int?
    /// Bytes on disk of the values a put phase stored (BlobCache).
    var storedBytes: Int?
    /// Gets that found nothing (the latency workload).
    var misses: Int?
    /// Per-operation latency percentiles (the latency workload).
    var latency: Latency?
    /// GC runs, journal rewrites and evictions during the phase (the latency workload).
    var maintenance: Maintenance?
    /// How the phase was set up, when the table does not say.
    var note: String?
    var opsPerSecond: Double { Double(ops) / seconds }
    var megabytesPerSecond: Double { Double(bytes) / 1e6 / seconds }

    enum CodingKeys: String, CodingKey {
        case workload, ops, seconds, bytes, hitRatio, indexBytesPerEntry, storedBytes, misses, latencyMicroseconds, maintenance, note
        case opsPerSecond, megabytesPerSecond
    }
    func encode(to encoder: Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(workload, forKey: .workload)
        try container.encode(ops, forKey: .ops)
        try container.encode(seconds, forKey: .seconds)
        try container.encode(bytes, forKey: .bytes)
        try container.encodeIfPresent(hitRatio, forKey: .hitRatio)
        try container.encodeIfPresent(indexBytesPerEntry, forKey: .indexBytesPerEntry)
        try container.encodeIfPresent(storedBytes, forKey: .storedBytes)
        try container.encodeIfPresent(misses, forKey: .misses)
        try container.encodeIfPresent(latency, forKey: .latencyMicroseconds)
        try container.encodeIfPresent(maintenance, forKey: .maintenance)
        try container.encodeIfPresent(note, forKey: .note)
        try container.encode(opsPerSecond, forKey: .opsPerSecond)
        try container.encode(megabytesPerSecond, forKey: .megabytesPerSecond)
    }
}

func now() -> Double {
    var time = timespec()
    clock_gettime(CLOCK_MONOTONIC, &time)
    return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
}

/// Flushes every dirty page to disk before a timed phase, so that a phase never pays for the
/// writes of the one (or the engine) before it.
func settle() {
    sync()
}

func freshDirectory(_ base: String, _ name: String) -> String {
    let path = base + "/" + name
    try? FileManager.default.removeItem(atPath: path)
    try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    return path
}

func makeEngine(_ options: Options, directory: String, maxBytes: Int? = nil, memoryLimit: Int? = nil) throws -> Engine {
    switch options.engine {
    case "blobcache":
        let engine = try BlobCacheEngine(directory: directory, maxBytes: maxBytes,
                                         compression: options.policy,
                                         packThreshold: options.packThreshold, memoryLimit: memoryLimit,
                                         encryption: options.encrypted ? .aesGCM(key: benchmarkKey) : nil)
        return options.streaming ? StreamingEngine(engine) : engine
    case "rawfs": return try RawFilesystemEngine(directory: directory)
    default: throw WorkloadError.usage("unknown engine \(options.engine)")
    }
}

/// Puts every (key, value), then gets every key, timing each phase. For BlobCache, W1 also
/// times a full fsck (MD5 of every blob) over the values' bytes.
func putThenGet(_ name: String, _ options: Options, keys: [String], value: (Int) -> UnsafeRawBufferPointer) throws -> [Measurement] {
    let directory = freshDirectory(options.work, name)
    let engine = try makeEngine(options, directory: directory)
    var bytes = 0
    settle()
    let putStart = now()
    for index in keys.indices {
        let slice = value(index)
        try engine.put(slice, key: keys[index])
        bytes += slice.count
    }
    let putSeconds = now() - putStart
    let stored = engine.storedBytes
    var read = 0
    settle()
    let getStart = now()
    for key in keys { read += try engine.get(key) ?? 0 }
    let getSeconds = now() - getStart
    try engine.close()
    precondition(read == bytes, "\(name): read \(read) bytes, wrote \(bytes)")
    var results = [Measurement(workload: "\(name).put", ops: keys.count, seconds: putSeconds, bytes: bytes, storedBytes: stored),
                   Measurement(workload: "\(name).get", ops: keys.count, seconds: getSeconds, bytes: read)]
    if name == "W1" && options.engine == "blobcache" {
        settle()
        let start = now()
        var checkOptions = BlobCache.CheckOptions()
        if options.encrypted { checkOptions.encryption = .aesGCM(key: benchmarkKey) }
        let report = try BlobCache.check(directory: directory, options: checkOptions)
        precondition(report.errors.isEmpty, "fsck found \(report.errors)")
        results.append(Measurement(workload: "W1.fsck", ops: report.blobsChecked, seconds: now() - start, bytes: bytes))
    }
    return results
}

func run(_ options: Options) throws -> [Measurement] {
    var results: [Measurement] = []
    let needsCorpus = options.workloads.contains { ["w1", "w5", "w5nocap", "w5mem", "eviction", "encryption", "scale", "presets"].contains($0) } && options.files == nil
    let corpus = needsCorpus ? try Corpus(directory: options.corpus) : nil
    for workload in options.workloads {
        switch workload {
        case "w1":
            if let files = options.files {
                let paths = (FileManager.default.enumerator(atPath: files)?.allObjects as? [String] ?? [])
                    .filter { FileManager.default.isReadableFile(atPath: files + "/" + $0) }.sorted()
                var flat: [UInt8] = [], offsets: [Int] = [0]
                for path in paths {
                    flat += FileManager.default.contents(atPath: files + "/" + path).map(Array.init) ?? []
                    offsets.append(flat.count)
                }
                try flat.withUnsafeBytes { all in
                    results += try putThenGet("W1", options, keys: paths) {
                        UnsafeRawBufferPointer(rebasing: all[offsets[$0]..<offsets[$0 + 1]])
                    }
                }
            } else {
                let corpus = corpus!
                try corpus.concat.withUnsafeBytes { all in
                    results += try putThenGet("W1", options, keys: corpus.files.map(\.path)) { index in
                        let file = corpus.files[index]
                        return UnsafeRawBufferPointer(rebasing: all[file.offset..<file.offset + file.size])
                    }
                }
            }
        case "w2", "w3", "w3codecs":
            let (file, size, count) = workload == "w2" ? ("synth_4k.bin", 4096, 10_000) : ("synth_1m.bin", 1 << 20, 1000)
            let blobs = try Corpus.blobs(options.corpus + "/" + file, size: size, count: count)
            let keys = blobs.map(md5Hex)
            let flat = blobs.flatMap { $0 }
            // w3codecs: W3 once per codec (BlobCache), named W3.none, W3.lz4, W3.zlib-1.
            let codecs: [Codec?] = workload == "w3codecs" ? [Codec.none, .lz4, .zlib(level: 1)] : [nil]
            if workload == "w3codecs" && options.engine != "blobcache" { continue }
            for codec in codecs {
                var setting = options
                if let codec { (setting.codec, setting.compression) = (codec, CompressionPolicy(codec: codec)) }
                let name = workload.uppercased().prefix(2) + (codec.map { ".\($0)" } ?? "")
                try flat.withUnsafeBytes { all in
                    results += try putThenGet(String(name), setting, keys: keys) {
                        UnsafeRawBufferPointer(rebasing: all[($0 * size)..<(($0 + 1) * size)])
                    }
                }
            }
        case "dedup2", "dedup3":
            // D2 and D3: W2's and W3's values set again under new keys (every put a dedup hit).
            let (file, size, count) = workload == "dedup2" ? ("synth_4k.bin", 4096, 10_000) : ("synth_1m.bin", 1 << 20, 1000)
            let flat = try Corpus.blobs(options.corpus + "/" + file, size: size, count: count).flatMap { $0 }
            try flat.withUnsafeBytes { all in
                results += try dedupPuts(workload == "dedup2" ? "D2" : "D3", options, count: count) {
                    UnsafeRawBufferPointer(rebasing: all[($0 * size)..<(($0 + 1) * size)])
                }
            }
        case "w2mixed": results += try w2Mixed(options)    // Mixed.swift, both engines
        case "w5nocap": results += try w5Uncapped(options, corpus: corpus!)
        case "w3stream":
            guard options.engine == "blobcache" else { continue }
            results += try w3Streaming(options)
        case "big":
            guard options.engine == "blobcache" else { continue }
            results += try bigValues(options)
        case "presets":
            guard options.engine == "blobcache" else { continue }
            results += try presets(options, corpus: corpus!)
        case "w4":
            guard options.engine == "blobcache" else { continue }
            results.append(try w4(options))
        case "w5":
            guard options.engine == "blobcache" else { continue }
            results.append(try w5(options, corpus: corpus!))
        case "eviction":
            guard options.engine == "blobcache" else { continue }
            results += try evictionRuns(options, corpus: corpus!)
        case "placement":
            results += try placement(options)
        case "latency":
            guard options.engine == "blobcache" else { continue }
            results += try latency(options)
        case "w6":
            guard options.engine == "blobcache" else { continue }
            results += try w6(options)
        case "surface":
            guard options.engine == "blobcache" else { continue }
            results += try surface(options)
        case "w5mem":
            guard options.engine == "blobcache" else { continue }
            results += try w5Memory(options, corpus: corpus!)
        case "readers":
            guard options.engine == "blobcache" else { continue }
            results += try readers(options)
        case "encryption":
            guard options.engine == "blobcache" else { continue }
            results += try encryptionComparison(options, corpus: corpus!)
        case "encryption-gets":
            guard options.engine == "blobcache" else { continue }
            results += try encryptionGetsAlone(options)
        case "remote":
            guard options.engine == "blobcache" else { continue }
            results += try remoteTier(options)
        case "warmup":
            guard options.engine == "blobcache" else { continue }
            results += try remoteWarmup(options)
        case "scale":
            guard options.engine == "blobcache" else { continue }
            results += try scale(options, corpus: corpus!)
        case "crash-open":
            guard options.engine == "blobcache" else { continue }
            results += try crashOpens(options)
        default:
            throw WorkloadError.usage("unknown workload \(workload)")
        }
    }
    return results
}

/// W4: a cache of 100,000 × 4 KiB entries; open it and get the middle key in a fresh process.
func w4(_ options: Options) throws -> Measurement {
    let directory = freshDirectory(options.work, "W4")
    let blobs = try Corpus.blobs(options.corpus + "/synth_4k.bin", size: 4096, count: 100_000)
    let keys = blobs.map(md5Hex)
    let engine = try makeEngine(options, directory: directory)
    for (key, blob) in zip(keys, blobs) { try blob.withUnsafeBytes { try engine.put($0, key: key) } }
    try engine.close()
    settle()
    // Time from cold fresh processes; memory from one more that warms up first (see w4Open).
    func open(warm: Bool) throws -> (seconds: Double, bytesPerEntry: Int) {
        let fields = try runChild(["w4-open", directory, keys[keys.count / 2]] + (warm ? ["--warm"] : []))
        guard fields.count == 2, let seconds = Double(fields[0]), let perEntry = Int(fields[1]) else {
            throw WorkloadError.usage("w4-open said: \(fields)")
        }
        return (seconds, perEntry)
    }
    let samples = try (0..<options.w4Runs).map { _ in try open(warm: false).seconds }.sorted()
    var measurement = Measurement(workload: "W4.open+get", ops: 1, seconds: samples[samples.count / 2], bytes: 4096)
    measurement.indexBytesPerEntry = try open(warm: true).bytesPerEntry
    return measurement
}

/// Runs this executable with `arguments` and returns the words it printed.
func runChild(_ arguments: [String]) throws -> [String] {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: CommandLine.arguments[0])
    process.arguments = arguments
    let pipe = Pipe()
    process.standardOutput = pipe
    try process.run()
    let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    process.waitUntilExit()
    return output.split(whereSeparator: \.isWhitespace).map(String.init)
}

/// Resident bytes of this process (/proc/self/statm).
func residentBytes() -> Int {
    let fields = (try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8))?.split(separator: " ") ?? []
    return fields.count > 1 ? (Int(fields[1]) ?? 0) * Int(sysconf(Int32(_SC_PAGESIZE))) : 0
}

/// The child side of W4: open, get one key, print the seconds it took and the resident bytes
/// the open cache added per entry. Cold (the default), the time is what a fresh process pays.
/// With `--warm`, an empty cache is opened and closed first, so that code pages, the worker
/// thread and allocator arenas that any open brings in are not counted as index memory; the
/// large buffers read at open are unmapped when freed, so what stays is the index.
func w4Open(directory: String, key: String, warm: Bool) throws {
    if warm {
        let empty = NSTemporaryDirectory() + "blobcache-w4-warm-\(getpid())"
        defer { try? FileManager.default.removeItem(atPath: empty) }
        let cache = try BlobCache(directory: empty)
        try cache.set([1, 2, 3], forKey: "warm")
        _ = try cache.bytes(forKey: "warm")
        try cache.close()
    }
    let before = residentBytes()
    let start = now()
    let cache = try BlobCache(directory: directory)
    guard try cache.bytes(forKey: key) != nil else { throw WorkloadError.usage("W4 key missing") }
    let seconds = now() - start
    let entries = try cache.totals().entries
    print(seconds, (residentBytes() - before) / max(1, entries))
}

/// W5: a cap at 25% of the corpus bytes (none when `uncapped`: W5.nocap), replaying the
/// zipfian 90/10 trace.
func w5(_ options: Options, corpus: Corpus, memoryLimit: Int? = nil, uncapped: Bool = false) throws -> Measurement {
    let cap = uncapped ? nil : corpus.files.reduce(0) { $0 + $1.size } / 4
    let engine = try makeEngine(options, directory: freshDirectory(options.work, uncapped ? "W5nocap" : "W5"), maxBytes: cap,
                                memoryLimit: memoryLimit)
    let trace = try Corpus.trace(options.corpus + "/w5_trace.tsv")
    var hits = 0, gets = 0, bytes = 0
    settle()
    var start = now()
    try corpus.concat.withUnsafeBytes { all in
        for (n, op) in trace.ops.enumerated() {
            if n == trace.warmup { settle(); start = now(); hits = 0; gets = 0; bytes = 0 }
            let file = corpus.files[op.index]
            if op.put {
                try engine.put(UnsafeRawBufferPointer(rebasing: all[file.offset..<file.offset + file.size]), key: file.path)
                bytes += file.size
            } else {
                gets += 1
                if let read = try engine.get(file.path) { hits += 1; bytes += read }
            }
        }
    }
    let seconds = now() - start
    try engine.close()
    var measurement = Measurement(workload: uncapped ? "W5.nocap" : "W5", ops: trace.ops.count - trace.warmup,
                                  seconds: seconds, bytes: bytes)
    measurement.hitRatio = Double(hits) / Double(max(1, gets))
    return measurement
}

func peakRSSKilobytes() -> Int {
    var usage = rusage()
    getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &usage)
    return usage.ru_maxrss
}

/// `gets`: every key of a kept cache read `rounds` times; prints the median round's ops/s and MB/s.
func repeatedGets(directory: String, rounds: Int) throws {
    let cache = try BlobCache(directory: directory)
    let keys = try cache.keys()
    var samples: [(seconds: Double, bytes: Int)] = []
    for _ in 0..<max(1, rounds) {
        var bytes = 0
        let start = now()
        for key in keys { bytes += try cache.bytes(forKey: key)?.count ?? 0 }
        samples.append((now() - start, bytes))
    }
    try cache.close()
    let median = samples.sorted { $0.seconds < $1.seconds }[samples.count / 2]
    print(String(format: "gets: %d keys, median of %d rounds: %.0f ops/s, %.1f MB/s", keys.count, samples.count,
                 Double(keys.count) / median.seconds, Double(median.bytes) / 1e6 / median.seconds))
}

/// `opens`: a kept cache opened and closed `rounds` times (replaying the whole journal each
/// time when `replay`); prints the median open time.
func repeatedOpens(directory: String, rounds: Int, replay: Bool) throws {
    var samples: [Double] = []
    var entries = 0
    for _ in 0..<max(1, rounds) {
        if replay { try? FileManager.default.removeItem(atPath: directory + "/index") }
        let start = now()
        let cache = try BlobCache(directory: directory)
        samples.append(now() - start)
        entries = try cache.totals().entries
        try cache.close()
    }
    print(String(format: "opens%@: %d entries, median of %d: %.2f ms", replay ? " (full replay)" : "", entries,
                 samples.count, samples.sorted()[samples.count / 2] * 1e3))
}

do {
    let arguments = Array(CommandLine.arguments.dropFirst())
    if arguments.first == "w4-open", arguments.count >= 3 {
        try w4Open(directory: arguments[1], key: arguments[2], warm: arguments.dropFirst(3).first == "--warm")
        exit(0)
    }
    if arguments.first == "w6-child", arguments.count == 4, let index = Int(arguments[2]), let count = Int(arguments[3]) {
        try w6Child(directory: arguments[1], index: index, count: count)
        exit(0)
    }
    if arguments.first == "crash-fill", arguments.count == 3, let count = Int(arguments[2]) {
        try crashFill(directory: arguments[1], count: count)
    }
    if arguments.first == "crash-open", arguments.count == 2 {
        try crashOpen(directory: arguments[1])
        exit(0)
    }
    if arguments.first == "replay-open", arguments.count == 2 {
        try replayOpen(directory: arguments[1])
        exit(0)
    }
    if arguments.first == "gets", arguments.count >= 2 {
        try repeatedGets(directory: arguments[1], rounds: arguments.count > 2 ? Int(arguments[2]) ?? 5 : 5)
        exit(0)
    }
    if arguments.first == "opens", arguments.count >= 2 {
        let rounds = arguments.count > 2 ? Int(arguments[2]) ?? 15 : 15
        try repeatedOpens(directory: arguments[1], rounds: rounds, replay: arguments.contains("--replay"))
        exit(0)
    }
    let options = try Options(arguments)
    try FileManager.default.createDirectory(atPath: options.work, withIntermediateDirectories: true)
    defer { if !options.keepWork { try? FileManager.default.removeItem(atPath: options.work) } }
    let results = try run(options)
    print("engine: \(options.engine)   codec: \(options.policy)   corpus: \(options.files ?? options.corpus)")
    print("workload        ops      seconds      ops/s       MB/s   hit ratio")
    for result in results {
        print(String(format: "%-12@ %7d %11.4f %10.0f %10.1f   %@", result.workload as NSString, result.ops, result.seconds,
                     result.opsPerSecond, result.megabytesPerSecond, (result.hitRatio.map { String(format: "%.3f", $0) } ?? "") as NSString))
    }
    printLatencies(results)
    let rss = peakRSSKilobytes()
    print("peak RSS: \(rss / 1024) MiB (includes the corpus held in memory)")
    struct Line: Encodable { let engine: String; let codec: String; let peakRSSKiB: Int; let results: [Measurement] }
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.sortedKeys]
    print(String(decoding: try encoder.encode(Line(engine: options.engine, codec: "\(options.policy)", peakRSSKiB: rss, results: results)), as: UTF8.self))
} catch {
    FileHandle.standardError.write(Data("workload: \(error)\n".utf8))
    exit(2)
}
