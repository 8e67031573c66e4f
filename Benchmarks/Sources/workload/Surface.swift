import BlobCache
import Dispatch
import Foundation

// `--workloads surface`: the library surface of issue 13, each figure against a baseline
// measured in the same run (rounds interleaved, medians):
//   mem.get       gets of 4 KiB values served by the memory tier, one thread
//   disk.get.off  gets of 4 KiB values from disk, memory tier off (0)
//   disk.get.on   the same gets with the memory tier on (16 MiB, the default), full of other
//                 values and missing: each get reads the disk and meets the doorkeeper
//   flight        1,000 concurrent callers of one missing key (`loads` must be 1)
//   hit.bytes     bytes(forKey:) of a memory-tier hit, awaited from a task
//   hit.value     value(forKey:loadingWith:) of the same hit (its overhead over hit.bytes)
// `--workloads w5mem`: W5 with a memory tier of 5% of the corpus bytes against W5 with none.

/// Runs an async body to its end from synchronous code.
func blocking<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) throws -> T {
    let done = DispatchSemaphore(value: 0)
    nonisolated(unsafe) var result: Result<T, any Error>!
    Task {
        do { result = .success(try await body()) } catch { result = .failure(error) }
        done.signal()
    }
    done.wait()
    return try result.get()
}

func median(_ samples: [Double]) -> Double { samples.sorted()[samples.count / 2] }

/// Value `n`: 4 KiB, distinct for each `n`.
@Sendable func value(_ n: Int) -> [UInt8] {
    var state = UInt64(n) &* 0x9E37_79B9_7F4A_7C15 | 1
    return (0..<4096).map { _ in
        state ^= state << 13; state ^= state >> 7; state ^= state << 17
        return UInt8(truncatingIfNeeded: state >> 56 & 0x3F)   // 6 bits: compressible, like real data
    }
}

func surface(_ options: Options, rounds: Int = 5) throws -> [Measurement] {
    var results: [Measurement] = []

    // Memory-tier hits: 1,000 values of 4 KiB (4 MiB, within the default 16 MiB).
    // (SURFACE_PARTS=disk runs the disk-tier part alone, for profiling.)
    if ProcessInfo.processInfo.environment["SURFACE_PARTS"] != "disk" {
        let cache = try BlobCache(directory: freshDirectory(options.work, "mem"))
        let keys = (0..<1000).map { "k\($0)" }
        for (n, key) in keys.enumerated() { try cache.set(value(n), forKey: key) }
        // Kept at the second read from disk (the doorkeeper).
        for _ in 0..<2 { for key in keys { _ = try cache.bytes(forKey: key) } }
        var samples: [Double] = []
        let gets = 1_000_000
        for _ in 0..<rounds {
            var bytes = 0
            let start = now()
            for n in 0..<gets { bytes &+= try cache.bytes(forKey: keys[n % 1000])!.count }
            samples.append(now() - start)
            precondition(bytes == gets * 4096)
        }
        precondition(cache.statistics().memoryHits >= rounds * gets)
        results.append(Measurement(workload: "mem.get", ops: gets, seconds: median(samples), bytes: gets * 4096))

        // Hits from a task: bytes(forKey:) against the single-flight form.
        let hits = 200_000
        let (plain, flight) = try blocking { () async throws -> (Double, Double) in
            var plain: [Double] = [], flight: [Double] = []
            for _ in 0..<rounds {
                var start = now()
                for n in 0..<hits { _ = try cache.bytes(forKey: keys[n % 1000]) }
                plain.append(now() - start)
                start = now()
                for n in 0..<hits { _ = try await cache.value(forKey: keys[n % 1000]) { fatalError("a hit loaded") } }
                flight.append(now() - start)
            }
            return (median(plain), median(flight))
        }
        results.append(Measurement(workload: "hit.bytes", ops: hits, seconds: plain, bytes: hits * 4096))
        results.append(Measurement(workload: "hit.value", ops: hits, seconds: flight, bytes: hits * 4096))

        // Single-flight: 1,000 callers of one missing key at once.
        let loads = Locked(0)
        let start = now()
        try blocking {
            try await withThrowingTaskGroup(of: Int.self) { group in
                for _ in 0..<1000 {
                    group.addTask {
                        try await cache.value(forKey: "missing") {
                            loads.withLock { $0 += 1 }
                            try await Task.sleep(for: .milliseconds(20))   // a slow origin
                            return value(5000)
                        }.count
                    }
                }
                for try await count in group { precondition(count == 4096) }
            }
        }
        var measurement = Measurement(workload: "flight", ops: 1000, seconds: now() - start, bytes: 4096)
        measurement.misses = loads.withLock { $0 }
        results.append(measurement)
        try cache.close()
    }

    // Disk-tier gets, memory tier off and on (missing), interleaved.
    do {
        let count = 10_000
        let directory = freshDirectory(options.work, "disk")
        var writer = try BlobCache(directory: directory)
        let keys = (0..<count).map { "d\($0)" }
        for (n, key) in keys.enumerated() { try writer.set(value(n), forKey: key) }
        // Other values read twice after the warm-up, so the tier is full of them when the
        // timed pass starts: every timed get misses it and meets the doorkeeper.
        let fillers = (0..<5_000).map { "f\($0)" }
        for (n, key) in fillers.enumerated() { try writer.set(value(100_000 + n), forKey: key) }
        try writer.close()
        var off: [Double] = [], on: [Double] = []
        for _ in 0..<rounds {
            for limit in [0, 16 << 20] {
                var configuration = BlobCache.Configuration()
                configuration.memoryLimit = limit
                writer = try BlobCache(directory: directory, configuration: configuration)
                for key in keys { _ = try writer.bytes(forKey: key) }   // warm: the page cache
                for key in fillers { for _ in 0..<2 { _ = try writer.bytes(forKey: key) } }   // kept at the second
                let memoryHits = writer.statistics().memoryHits
                let start = now()
                for key in keys { _ = try writer.bytes(forKey: key) }
                (limit == 0 ? { off.append(now() - start) } : { on.append(now() - start) })()
                precondition(writer.statistics().memoryHits == memoryHits, "a timed get hit the memory tier")
                try writer.close()
            }
        }
        results.append(Measurement(workload: "disk.get.off", ops: count, seconds: median(off), bytes: count * 4096))
        results.append(Measurement(workload: "disk.get.on", ops: count, seconds: median(on), bytes: count * 4096))
    }
    return results
}

/// W5 (see `w5`) with no memory tier and with one of 5% of the corpus bytes, runs interleaved.
func w5Memory(_ options: Options, corpus: Corpus, runs: Int = 3) throws -> [Measurement] {
    let corpusBytes = corpus.files.reduce(0) { $0 + $1.size }
    var none: [Measurement] = [], some: [Measurement] = []
    for _ in 0..<runs {
        none.append(try w5(options, corpus: corpus, memoryLimit: 0))
        some.append(try w5(options, corpus: corpus, memoryLimit: corpusBytes / 20))
    }
    func middle(_ runs: [Measurement], _ name: String) -> Measurement {
        let chosen = runs.sorted { $0.opsPerSecond < $1.opsPerSecond }[runs.count / 2]
        var renamed = Measurement(workload: name, ops: chosen.ops, seconds: chosen.seconds, bytes: chosen.bytes)
        renamed.hitRatio = chosen.hitRatio
        return renamed
    }
    return [middle(none, "W5.mem0"), middle(some, "W5.mem5%")]
}

/// A value behind a lock (the benchmark's own; the library's is internal).
final class Locked<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value
    init(_ value: Value) { self.value = value }
    func withLock<T>(_ body: (inout Value) throws -> T) rethrows -> T {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}
