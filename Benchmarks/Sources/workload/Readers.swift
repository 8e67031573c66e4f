import BlobCache
import Foundation

// `--workloads readers`: W2 get from one thread against two threads on one cache (issue 15,
// target 9: two threads ≥ 1.7× one on this 2-core machine). The cache holds W2's 10,000
// values of 4 KiB with the memory tier off, so every get reads its pack segment; each thread
// reads every key `readerPasses` times, from its own start. Rounds interleave one and two threads; the
// figures are medians of aggregate gets/s (W2.get.1t, W2.get.2t).

/// Rounds of `readers`: 5, or `READERS_ROUNDS` (more for a profile under perf).
let readerRounds = ProcessInfo.processInfo.environment["READERS_ROUNDS"].flatMap { Int($0) }.map { max(1, $0) } ?? 5

/// Passes over every key each reader thread makes in a round: `READERS_PASSES`, default 5.
/// One pass is about 16 ms here, short enough that waking the threads and the scheduler's
/// placement of them weigh on the two-thread figure: in eight alternated runs, one pass gave
/// a median of 1.67× (1.26–1.87×), five passes (about 80 ms) 1.85× (1.26–1.89×, 7 of 8 at
/// 1.8× or more).
let readerPasses = ProcessInfo.processInfo.environment["READERS_PASSES"].flatMap { Int($0) }.map { max(1, $0) } ?? 5

func readers(_ options: Options, rounds: Int = readerRounds) throws -> [Measurement] {
    let blobs = try Corpus.blobs(options.corpus + "/synth_4k.bin", size: 4096, count: 10_000)
    let keys = blobs.map(md5Hex)
    var configuration = BlobCache.Configuration()
    configuration.memoryLimit = 0
    configuration.compression = options.policy
    if options.encrypted { configuration.encryption = .aesGCM(key: benchmarkKey) }
    let cache = try BlobCache(directory: freshDirectory(options.work, "readers"), configuration: configuration)
    defer { try? cache.close() }
    for (key, blob) in zip(keys, blobs) { try cache.set(blob, forKey: key) }
    for key in keys { _ = try cache.bytes(forKey: key) }   // warm the page cache
    // One untimed round first, so that no timed round runs with the threads and code cold.
    _ = try timedReaders(cache, keys: keys, threads: 1)
    _ = try timedReaders(cache, keys: keys, threads: 2)
    settle()
    var one: [Double] = [], two: [Double] = []
    for _ in 0..<rounds {
        one.append(try timedReaders(cache, keys: keys, threads: 1))
        two.append(try timedReaders(cache, keys: keys, threads: 2))
    }
    let reads = keys.count * readerPasses
    let single = Measurement(workload: "W2.get.1t", ops: reads, seconds: median(one), bytes: reads * 4096)
    var double = Measurement(workload: "W2.get.2t", ops: 2 * reads, seconds: median(two), bytes: 2 * reads * 4096)
    // The ratio of the medians, then each round's (a round pairs a one- and a two-thread pass).
    let rounds = zip(one, two).map { String(format: "%.2f", 2 * $0 / $1) }.joined(separator: ", ")
    double.note = String(format: "%.2f× one thread", double.opsPerSecond / single.opsPerSecond) + " (rounds: \(rounds))"
    return [single, double]
}

/// Seconds for `threads` threads to get every key once each (thread t starts at key t·n/threads).
func timedReaders(_ cache: BlobCache, keys: [String], threads: Int) throws -> Double {
    let ready = DispatchSemaphore(value: 0), go = DispatchSemaphore(value: 0), done = DispatchGroup()
    let failures = Failures()
    for thread in 0..<threads {
        done.enter()
        Thread {
            ready.signal()
            go.wait()
            let start = thread * keys.count / threads
            var bytes = 0
            for n in 0..<(keys.count * readerPasses) {
                do { bytes += try cache.bytes(forKey: keys[(start + n) % keys.count])?.count ?? 0 } catch { failures.add(error) }
            }
            if bytes != keys.count * readerPasses * 4096 { failures.add(WorkloadError.usage("readers: read \(bytes) bytes")) }
            done.leave()
        }.start()
    }
    for _ in 0..<threads { ready.wait() }
    let start = now()
    for _ in 0..<threads { go.signal() }
    done.wait()
    let seconds = now() - start
    if let failure = failures.first { throw failure }
    return seconds
}

/// The first error any reader thread met.
final class Failures: @unchecked Sendable {
    private let lock = NSLock()
    private var errors: [any Error] = []
    func add(_ error: any Error) { lock.withLock { errors.append(error) } }
    var first: (any Error)? { lock.withLock { errors.first } }
}
