// Micro-benchmarks (ordo-one/benchmark): `swift package --package-path Benchmarks benchmark`.
// MD5, each codec, put/get of 4 KiB, 64 KiB and 1 MiB values, journal replay per 100k entries,
// and put at the cap (constant eviction) against put below it.
import Benchmark
import BlobCache
import Foundation

/// Text-like bytes that compress about as well as the corpus (LZ4 ratio about 2): words drawn at
/// random, with a random byte now and then.
func sample(_ count: Int, seed: UInt64) -> [UInt8] {
    var state = seed &* 0x9E37_79B9_7F4A_7C15 | 1
    let words = "the cache stores each blob once under its digest and journals every key with a checksum"
        .split(separator: " ").map { Array($0.utf8) + [32] }
    var bytes: [UInt8] = []
    bytes.reserveCapacity(count + 16)
    while bytes.count < count {
        state = state &* 6364136223846793005 &+ 1442695040888963407
        if state >> 60 == 0 { bytes.append(UInt8(truncatingIfNeeded: state >> 33)) }
        bytes += words[Int(state >> 40) % words.count]
    }
    return Array(bytes.prefix(count))
}

/// Makes value number `n` distinct from every other by stamping `n` into its first bytes.
func distinct(_ base: [UInt8], _ n: Int) -> [UInt8] {
    var value = base
    withUnsafeBytes(of: UInt64(n)) { stamp in for i in 0..<min(8, value.count) { value[i] = stamp[i] } }
    return value
}

func scratchDirectory(_ name: String) -> String {
    let path = NSTemporaryDirectory() + "blobcache-bench-\(getpid())-\(name)"
    try? FileManager.default.removeItem(atPath: path)
    return path
}

let sizes = [("4 KiB", 4096), ("64 KiB", 65_536), ("1 MiB", 1 << 20)]

let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(
        metrics: [.wallClock, .throughput, .mallocCountTotal, .peakMemoryResident],
        maxDuration: .seconds(2), maxIterations: 100_000)

    for (label, size) in sizes {
        let value = sample(size, seed: 1)
        Benchmark("MD5 \(label)") { benchmark in
            for _ in benchmark.scaledIterations { blackHole(BlobID(hashing: value)) }
        }
        for codec in [Codec.lz4, .zlib(level: 1), .zlib(level: 6)] {
            let payload = codec.compress(value) ?? []
            Benchmark("\(codec) compress \(label)") { benchmark in
                for _ in benchmark.scaledIterations { blackHole(codec.compress(value)) }
            }
            Benchmark("\(codec) decompress \(label)") { benchmark in
                for _ in benchmark.scaledIterations { blackHole(codec.decompress(payload, originalCount: size)) }
            }
        }
        // 1,000 puts (gets) per sample, on a cache opened once: steady state, not first-put costs.
        Benchmark("put \(label)", configuration: .init(scalingFactor: .kilo)) { benchmark in
            let cache = try BlobCache(directory: scratchDirectory("put\(size)"))
            var n = 0
            benchmark.startMeasurement()
            for _ in benchmark.scaledIterations {
                try cache.set(distinct(value, n), forKey: "k\(n)")   // a copy: every put stores a new blob
                n += 1
            }
            benchmark.stopMeasurement()
            try cache.close()
            try? FileManager.default.removeItem(atPath: cache.directory)
        }
        Benchmark("get \(label)", configuration: .init(scalingFactor: .kilo)) { benchmark in
            let cache = try BlobCache(directory: scratchDirectory("get\(size)"))
            for n in 0..<64 { try cache.set(distinct(value, n), forKey: "k\(n)") }
            benchmark.startMeasurement()
            for iteration in benchmark.scaledIterations { blackHole(try cache.bytes(forKey: "k\(iteration % 64)")) }
            benchmark.stopMeasurement()
            try cache.close()
            try? FileManager.default.removeItem(atPath: cache.directory)
        }
    }

    // Opening 100,000 entries: from the index snapshot a clean close leaves, and by replaying
    // the journal's 100,000 set records (the snapshot deleted first, as after a crash).
    let replayDirectory = scratchDirectory("replay")
    for fromSnapshot in [true, false] {
        let label = fromSnapshot ? "open 100k entries from the snapshot" : "open + replay 100k journal records"
        Benchmark(label, configuration: .init(maxDuration: .seconds(3), maxIterations: 50)) { benchmark in
            for _ in benchmark.scaledIterations {
                if !fromSnapshot { try? FileManager.default.removeItem(atPath: replayDirectory + "/index") }
                let cache = try BlobCache(directory: replayDirectory)
                blackHole(try cache.totals().entries)
                try cache.close()
            }
        } setup: {
            try? FileManager.default.removeItem(atPath: replayDirectory)
            let cache = try BlobCache(directory: replayDirectory)
            let base = sample(64, seed: 3)
            for n in 0..<100_000 { try cache.set(distinct(base, n), forKey: "entry-\(n)") }
            try cache.close()
        }
    }

    // Put 4 KiB at the cap (every put evicts) versus below it (no eviction).
    for (label, cap) in [("below the cap", Int?.none), ("at the cap (evicting)", Int?.some(8 << 20))] {
        Benchmark("put 4 KiB \(label)", configuration: .init(scalingFactor: .kilo)) { benchmark in
            var configuration = BlobCache.Configuration()
            configuration.maxStoredBytes = cap
            let cache = try BlobCache(directory: scratchDirectory("cap\(cap ?? 0)"), configuration: configuration)
            let base = sample(4096, seed: 4)
            for n in 0..<4000 { try cache.set(distinct(base, n), forKey: "warm-\(n)") }   // fill to the cap
            var n = 4000
            benchmark.startMeasurement()
            for _ in benchmark.scaledIterations {
                try cache.set(distinct(base, n), forKey: "k\(n)")
                n += 1
            }
            benchmark.stopMeasurement()
            try cache.close()
            try? FileManager.default.removeItem(atPath: cache.directory)
        }
    }
}
