import BlobCache
import Dispatch
import Foundation
import Synchronization

// The latency workload: whether a get waits behind a whole pack GC run or journal rewrite.
// A cache is filled to its byte cap; then one thread reads recently written keys while
// another puts new values at the cap (every put evicts, dead pack bytes accumulate, GC and
// journal compaction run), and each get is timed. The same reads with no writer give the
// idle baseline.

/// When each of one thread's operations began and how long it took (monotonic nanoseconds).
struct Timings {
    private(set) var begins: [UInt64] = []
    private(set) var durations: [UInt64] = []

    init(capacity: Int) {
        begins.reserveCapacity(capacity)
        durations.reserveCapacity(capacity)
    }

    var count: Int { durations.count }

    mutating func append(begin: UInt64, end: UInt64) {
        begins.append(begin)
        durations.append(end - begin)
    }

    /// The operations that took longer than `nanoseconds`, as time intervals.
    func slower(than nanoseconds: UInt64) -> [ClosedRange<UInt64>] {
        durations.indices.filter { durations[$0] > nanoseconds }.map { begins[$0]...(begins[$0] + durations[$0]) }
    }
}

/// Percentiles of one thread's operation latencies, in microseconds (nearest rank), and how
/// many operations took over a millisecond (the issue's aim for a get).
struct Latency: Encodable {
    let p50: Double
    let p90: Double
    let p99: Double
    let p999: Double
    let max: Double
    let over1ms: Int
    /// Of those, how many overlapped a put of the other thread that ran pack GC or a journal
    /// rewrite: the gets that waited behind one (or were slowed alongside it).
    var over1msDuringMaintenance: Int?

    static let millisecond: UInt64 = 1_000_000

    init(_ timings: Timings, maintenance: [ClosedRange<UInt64>]? = nil) {
        let sorted = timings.durations.sorted()
        func rank(_ fraction: Double) -> Double {
            guard !sorted.isEmpty else { return 0 }
            let index = Swift.max(0, Swift.min(sorted.count - 1, Int((fraction * Double(sorted.count)).rounded(.up)) - 1))
            return Double(sorted[index]) / 1e3
        }
        p50 = rank(0.5)
        p90 = rank(0.9)
        p99 = rank(0.99)
        p999 = rank(0.999)
        max = rank(1)
        let slow = timings.slower(than: Self.millisecond)
        over1ms = slow.count
        over1msDuringMaintenance = maintenance.map { puts in slow.filter { get in puts.contains { $0.overlaps(get) } }.count }
    }
}

/// What the cache's maintenance did during a measured phase (differences of its counters),
/// and the longest put that ran some (in microseconds; 0 when none did).
struct Maintenance: Encodable {
    let packCollections: Int
    let journalCompactions: Int
    let evictions: Int
    let longestMaintenancePutMicroseconds: Double

    init(from before: BlobCache.Counters, to after: BlobCache.Counters, puts: [ClosedRange<UInt64>]) {
        packCollections = after.packCollections - before.packCollections
        journalCompactions = after.journalCompactions - before.journalCompactions
        evictions = after.evictions - before.evictions
        longestMaintenancePutMicroseconds = Double(puts.map { $0.upperBound - $0.lowerBound }.max() ?? 0) / 1e3
    }

    /// Whether a pack GC run or journal rewrite happened between two readings of the counters.
    static func ran(from before: BlobCache.Counters, to after: BlobCache.Counters) -> Bool {
        after.packCollections != before.packCollections || after.journalCompactions != before.journalCompactions
    }
}

/// CLOCK_MONOTONIC in nanoseconds.
func monotonicNanoseconds() -> UInt64 {
    var time = timespec()
    clock_gettime(CLOCK_MONOTONIC, &time)
    return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
}

/// SplitMix64: a small deterministic generator, so every run puts and reads the same sequence.
struct SplitMix64 {
    private var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9e37_79b9_7f4a_7c15
        var z = state
        z = (z ^ (z >> 30)) &* 0xbf58_476d_1ce4_e5b9
        z = (z ^ (z >> 27)) &* 0x94d0_49bb_1331_11eb
        return z ^ (z >> 31)
    }
    /// A value in `0..<bound` (`bound` > 0).
    mutating func next(below bound: Int) -> Int { Int(next() % UInt64(bound)) }
}

/// The values the latency workload puts: a fixed pool (the corpus's 4 KiB synthetic blobs
/// when present, else generated), each put stamped with its index in the first 8 bytes so
/// that every value is new (identical bytes would be stored once and write nothing).
struct LatencyValues {
    let pool: [[UInt8]]
    /// Where the pool came from, for the report.
    let source: String

    static let poolSize = 2048

    init(corpus: String) {
        let path = corpus + "/synth_4k.bin"
        if let blobs = Self.corpusBlobs(path), !blobs.isEmpty {
            pool = blobs
            source = "\(blobs.count) × 4 KiB blobs of \(path)"
        } else {
            pool = Self.syntheticPool()
            source = "synthetic 1–16 KiB values, 2 in 3 compressible (\(path) absent)"
        }
    }

    /// Up to `poolSize` 4 KiB blobs from the start of a synth_4k.bin; nil when unreadable.
    static func corpusBlobs(_ path: String) -> [[UInt8]]? {
        guard let file = FileHandle(forReadingAtPath: path) else { return nil }
        defer { try? file.close() }
        guard let data = try? file.read(upToCount: 4096 * poolSize) else { return nil }
        let bytes = Array(data)
        return (0..<(bytes.count / 4096)).map { Array(bytes[($0 * 4096)..<(($0 + 1) * 4096)]) }
    }

    /// Deterministic values of 1–16 KiB: one in three random bytes (incompressible), the
    /// others text-like runs of words from a small vocabulary (LZ4 compresses them a few times).
    static func syntheticPool() -> [[UInt8]] {
        var random = SplitMix64(seed: 0x1a7e_4c7)
        let letters = Array("abcdefghijklmnopqrstuvwxyz".utf8)
        let words: [[UInt8]] = (0..<64).map { _ in (0..<(3 + random.next(below: 8))).map { _ in letters[random.next(below: 26)] } + [32] }
        return (0..<poolSize).map { index in
            let size = 1024 + random.next(below: 15 * 1024 + 1)
            var value: [UInt8] = []
            value.reserveCapacity(size + 16)
            if index % 3 == 2 {
                while value.count < size { withUnsafeBytes(of: random.next()) { value += $0 } }
            } else {
                while value.count < size { value += words[random.next(below: words.count)] }
            }
            return Array(value.prefix(size))
        }
    }

    /// Value number `index` written into `buffer`.
    func value(_ index: Int, into buffer: inout [UInt8]) {
        buffer = pool[index % pool.count]
        withUnsafeBytes(of: UInt64(index).littleEndian) { stamp in
            for offset in 0..<min(stamp.count, buffer.count) { buffer[offset] = stamp[offset] }
        }
    }

    static func key(_ index: Int) -> String { "latency/\(index)" }
}

/// What the writer thread measured.
struct WriterOutcome {
    var timings: Timings
    /// When the puts that ran pack GC or a journal rewrite began and ended.
    var maintenance: [ClosedRange<UInt64>] = []
    var seconds = 0.0
    var bytes = 0
}

/// State the writer thread shares with the reader.
final class WriterProgress: Sendable {
    /// Values written so far: keys `0..<written` have been put.
    let written: Atomic<Int>
    let finished = Atomic<Bool>(false)
    /// The writer's put timings, the puts that ran GC or a journal rewrite, its seconds and
    /// bytes; or its error.
    let outcome = Mutex<Result<WriterOutcome, any Error>?>(nil)
    let exited = DispatchSemaphore(value: 0)

    init(written: Int) { self.written = Atomic(written) }
}

/// The latency workload (`--workloads latency`); see the file's header.
func latency(_ options: Options) throws -> [Measurement] {
    var configuration = BlobCache.Configuration()
    configuration.maxStoredBytes = options.cap
    configuration.compression = options.policy
    if let packThreshold = options.packThreshold { configuration.packThreshold = packThreshold }
    let cache = try BlobCache(directory: freshDirectory(options.work, "latency"), configuration: configuration)
    defer { try? cache.close() }
    let values = LatencyValues(corpus: options.corpus)
    let prefilled = try prefill(cache, values: values, cap: options.cap)
    let entries = try cache.totals().entries
    // Keys written in the last half a cap's worth of puts survive eviction (reads only make
    // them more recent), so the reader asks for those.
    let window = max(1, entries / 2)
    _ = try timedGets("warm-up", cache, count: 1000, window: window, seed: 1) { prefilled }
    let idle = try timedGets("lat.get.idle", cache, count: options.latencyPuts, window: window, seed: 2) { prefilled }
    let before = try cache.totals().counters
    let progress = WriterProgress(written: prefilled)
    startWriter(cache, values: values, from: prefilled, count: options.latencyPuts, progress: progress)
    var (busy, reads) = try timedGets("lat.get.gc", cache, count: nil, window: window, seed: 3, stop: progress) {
        progress.written.load(ordering: .acquiring)
    }
    progress.exited.wait()
    let after = try cache.totals().counters
    guard let outcome = progress.outcome.withLock({ $0 }) else { throw WorkloadError.usage("latency: the writer reported nothing") }
    let written = try outcome.get()
    busy.latency = Latency(reads, maintenance: written.maintenance)
    var put = Measurement(workload: "lat.put.gc", ops: options.latencyPuts, seconds: written.seconds, bytes: written.bytes)
    put.latency = Latency(written.timings)
    put.maintenance = Maintenance(from: before, to: after, puts: written.maintenance)
    put.note = "cap \(options.cap) bytes, \(entries) entries after pre-filling with \(prefilled) puts; values: \(values.source);"
        + " load average \(loadAverage) at the end"
    return [idle.measurement, busy, put]
}

/// Puts values 0, 1, … until the first eviction, so the cache is at its cap; returns how many.
func prefill(_ cache: BlobCache, values: LatencyValues, cap: Int) throws -> Int {
    var buffer: [UInt8] = []
    var index = 0
    // A value stores at least a few hundred bytes; far more puts than that means no cap.
    while try cache.totals().counters.evictions == 0 {
        guard index <= cap / 64 else { throw WorkloadError.usage("latency: \(index) puts and still no eviction at cap \(cap)") }
        values.value(index, into: &buffer)
        try cache.set(buffer, forKey: LatencyValues.key(index))
        index += 1
    }
    return index
}

/// Runs the writer on a thread of its own (`writePuts`), then signals `progress.exited`.
func startWriter(_ cache: BlobCache, values: LatencyValues, from first: Int, count: Int, progress: WriterProgress) {
    let thread = Thread {
        let result = Result { try writePuts(cache, values: values, from: first, count: count, progress: progress) }
        progress.outcome.withLock { $0 = result }
        progress.finished.store(true, ordering: .releasing)
        progress.exited.signal()
    }
    thread.start()
}

/// Puts values `first..<first + count` at the cap, timing each and publishing progress after
/// each. The counters are read after each put (outside its timing) to tell which puts ran
/// pack GC or a journal rewrite.
func writePuts(_ cache: BlobCache, values: LatencyValues, from first: Int, count: Int, progress: WriterProgress) throws -> WriterOutcome {
    var outcome = WriterOutcome(timings: Timings(capacity: count))
    var buffer: [UInt8] = []
    var counters = try cache.totals().counters
    let start = monotonicNanoseconds()
    for index in first..<(first + count) {
        values.value(index, into: &buffer)
        let key = LatencyValues.key(index)
        let begin = monotonicNanoseconds()
        try cache.set(buffer, forKey: key)
        let end = monotonicNanoseconds()
        outcome.timings.append(begin: begin, end: end)
        outcome.bytes += buffer.count
        progress.written.store(index + 1, ordering: .releasing)
        let now = try cache.totals().counters
        if Maintenance.ran(from: counters, to: now) { outcome.maintenance.append(begin...end) }
        counters = now
    }
    outcome.seconds = Double(monotonicNanoseconds() - start) / 1e9
    return outcome
}

/// Gets of keys among the `window` most recently written (`newest()` of them so far), chosen
/// by a seeded generator and timed one by one: `count` of them, or with `stop`, until its
/// writer finishes. Returns ops, seconds, bytes read, hit ratio, misses and latencies, and
/// the timings themselves.
func timedGets(_ name: String, _ cache: BlobCache, count: Int?, window: Int, seed: UInt64, stop: WriterProgress? = nil,
               newest: () -> Int) throws -> (measurement: Measurement, timings: Timings) {
    var random = SplitMix64(seed: seed)
    var timings = Timings(capacity: count ?? 1 << 20)
    var bytes = 0, misses = 0
    let start = monotonicNanoseconds()
    while count.map({ timings.count < $0 }) ?? !(stop?.finished.load(ordering: .acquiring) ?? true) {
        let key = LatencyValues.key(max(0, newest() - 1 - random.next(below: window)))
        let begin = monotonicNanoseconds()
        let value = try cache.bytes(forKey: key)
        timings.append(begin: begin, end: monotonicNanoseconds())
        if let value { bytes += value.count } else { misses += 1 }
    }
    let seconds = Double(monotonicNanoseconds() - start) / 1e9
    var measurement = Measurement(workload: name, ops: timings.count, seconds: seconds, bytes: bytes)
    measurement.hitRatio = Double(timings.count - misses) / Double(max(1, timings.count))
    measurement.misses = misses
    measurement.latency = Latency(timings)
    return (measurement, timings)
}

/// The 1-minute load average (/proc/loadavg), so a report says how busy the machine was.
var loadAverage: String {
    (try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8))?.split(separator: " ").first.map(String.init) ?? "unknown"
}

/// The latency workload's part of the report: a table of percentiles, then what maintenance
/// ran meanwhile and how the cache was set up. Prints nothing when no result has latencies.
func printLatencies(_ results: [Measurement]) {
    let timed = results.filter { $0.latency != nil }
    guard !timed.isEmpty else { return }
    print("latency (µs)     ops       p50       p90       p99     p99.9       max   >1 ms   misses")
    for result in timed {
        guard let latency = result.latency else { continue }
        print(String(format: "%-12@ %7d %9.1f %9.1f %9.1f %9.1f %9.1f %7d   %@", result.workload as NSString, result.ops,
                     latency.p50, latency.p90, latency.p99, latency.p999, latency.max, latency.over1ms,
                     (result.misses.map { String($0) } ?? "") as NSString))
    }
    for result in timed {
        guard let latency = result.latency, let during = latency.over1msDuringMaintenance else { continue }
        print("\(result.workload): \(during) of the \(latency.over1ms) gets over 1 ms overlapped a put that ran pack GC or a journal rewrite")
    }
    for result in results {
        if let maintenance = result.maintenance {
            print(String(format: "%@: %d pack collections, %d journal rewrites, %d evictions during the run; the longest put that ran one took %.1f ms",
                         result.workload as NSString, maintenance.packCollections, maintenance.journalCompactions, maintenance.evictions,
                         maintenance.longestMaintenancePutMicroseconds / 1e3))
        }
        if let note = result.note { print("\(result.workload): \(note)") }
    }
}
