import BlobCache
import Foundation

// `--workloads scale` (issue 15, "Scale"): what an operation costs in a large cache against a
// small one, and what a large index costs in memory, on disk and at open.
//
// Per-operation cost: W1-style puts then gets of N distinct small values of real data (keys
// are corpus paths made unique, values 256–2,047-byte slices of the corpus with their number
// written into the first 8 bytes, so that none dedups), for each N in SCALE_SIZES (default
// 10000,1000000). Gets go in one fixed random order, the same for every N, so that a large
// cache is read as a user would, not in the order it was written. Each size's put and get rows
// carry their per-op cost relative to the smallest size's.
//
// Index at scale: for each N in SCALE_INDEX_SIZES (default 1000000,10000000), N tiny values
// (64 bytes) are put and the cache closed (a clean close writes the snapshot). Then: the
// snapshot's size, the resident bytes per entry of an open index and the cold open + first
// get (both in fresh processes, as W4), and the full replay of the journal (snapshot deleted,
// fresh process) in records/s.

/// The sizes named by `variable` (comma-separated counts), or `fallback`.
private func sizes(_ variable: String, _ fallback: [Int]) -> [Int] {
    guard let text = ProcessInfo.processInfo.environment[variable] else { return fallback }
    return text.split(separator: ",").compactMap { Int($0.trimmingCharacters(in: .whitespaces)) }.filter { $0 > 0 }
}

/// Writes value `number` (a slice of the corpus of `length` bytes, its first 8 bytes the number)
/// into `buffer` and returns it.
private func scaleValue(_ number: Int, length: Int, corpus: UnsafeRawBufferPointer,
                        into buffer: UnsafeMutableRawBufferPointer) -> UnsafeRawBufferPointer {
    let start = (number &* 7_919) % (corpus.count - length)
    let out = UnsafeMutableRawBufferPointer(rebasing: buffer[..<length])
    out.copyMemory(from: UnsafeRawBufferPointer(rebasing: corpus[start..<start + length]))
    out.storeBytes(of: UInt64(number).littleEndian, toByteOffset: 0, as: UInt64.self)
    return UnsafeRawBufferPointer(out)
}

private func scaleKeys(_ count: Int, corpus: Corpus) -> [String] {
    (0..<count).map { corpus.files[$0 % corpus.files.count].path + "#" + String($0) }
}

/// A fixed permutation of 0..<count (a linear congruential shuffle, the same on every run).
private func fixedShuffle(_ count: Int) -> [Int] {
    var order = Array(0..<count)
    var state: UInt64 = 0x9E37_79B9_7F4A_7C15
    for index in stride(from: count - 1, to: 0, by: -1) {
        state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
        order.swapAt(index, Int((state >> 33) % UInt64(index + 1)))
    }
    return order
}

func scale(_ options: Options, corpus: Corpus) throws -> [Measurement] {
    var results: [Measurement] = []
    let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 4096, alignment: 8)
    defer { buffer.deallocate() }
    try corpus.concat.withUnsafeBytes { all in
        let counts = sizes("SCALE_SIZES", [10_000, 1_000_000])
        var base: (put: Double, get: Double)?
        for count in counts {
            let keys = scaleKeys(count, corpus: corpus)
            let order = fixedShuffle(count)
            let engine = try makeEngine(options, directory: freshDirectory(options.work, "scale-\(count)"))
            var bytes = 0
            settle()
            let putStart = now()
            for number in 0..<count {
                let value = scaleValue(number, length: 256 + (number &* 131) % 1792, corpus: all, into: buffer)
                try engine.put(value, key: keys[number])
                bytes += value.count
            }
            let putSeconds = now() - putStart
            var read = 0
            settle()
            let getStart = now()
            for number in order { read += try engine.get(keys[number]) ?? 0 }
            let getSeconds = now() - getStart
            try engine.close()
            precondition(read == bytes, "scale \(count): read \(read) bytes, wrote \(bytes)")
            let perOp = (put: putSeconds / Double(count), get: getSeconds / Double(count))
            base = base ?? perOp
            func note(_ cost: Double, _ baseCost: Double) -> String {
                String(format: "%.2f µs/op, %.2f× the per-op cost at %d entries", cost * 1e6, cost / baseCost, counts[0])
            }
            var put = Measurement(workload: "scale.\(count).put", ops: count, seconds: putSeconds, bytes: bytes)
            put.note = note(perOp.put, base!.put)
            var get = Measurement(workload: "scale.\(count).get", ops: count, seconds: getSeconds, bytes: read)
            get.note = note(perOp.get, base!.get) + " (random order)"
            results += [put, get]
            if !options.keepWork { try? FileManager.default.removeItem(atPath: options.work + "/scale-\(count)") }
        }
        for count in sizes("SCALE_INDEX_SIZES", [1_000_000, 10_000_000]) {
            results += try indexAtScale(options, count: count, corpus: corpus, all: all, buffer: buffer)
        }
    }
    return results
}

/// Fills a cache with `count` 64-byte values, then measures its snapshot, its index in memory,
/// a cold open + get and a full replay.
private func indexAtScale(_ options: Options, count: Int, corpus: Corpus, all: UnsafeRawBufferPointer,
                          buffer: UnsafeMutableRawBufferPointer) throws -> [Measurement] {
    let directory = freshDirectory(options.work, "scale-index-\(count)")
    defer { if !options.keepWork { try? FileManager.default.removeItem(atPath: directory) } }
    let keys = scaleKeys(count, corpus: corpus)
    let engine = try makeEngine(options, directory: directory)
    let start = now()
    for number in 0..<count {
        try engine.put(scaleValue(number, length: 64, corpus: all, into: buffer), key: keys[number])
    }
    let fillSeconds = now() - start
    try engine.close()
    let snapshotBytes = (try FileManager.default.attributesOfItem(atPath: directory + "/index")[.size] as? Int) ?? 0
    let middle = keys[count / 2]
    settle()
    let cold = try (0..<3).map { _ in try runChild(["w4-open", directory, middle]) }
    let warm = try runChild(["w4-open", directory, middle, "--warm"])
    guard cold.allSatisfy({ $0.count == 2 }), warm.count == 2, let perEntry = Int(warm[1]) else {
        throw WorkloadError.usage("w4-open said: \(cold) \(warm)")
    }
    let openSeconds = cold.compactMap { Double($0[0]) }.sorted()[cold.count / 2]
    let replay = try runChild(["replay-open", directory])
    guard replay.count == 2, let records = Int(replay[0]), let replaySeconds = Double(replay[1]) else {
        throw WorkloadError.usage("replay-open said: \(replay)")
    }
    var fill = Measurement(workload: "scale.index.\(count).put", ops: count, seconds: fillSeconds, bytes: count * 64)
    fill.indexBytesPerEntry = perEntry
    fill.note = String(format: "64-byte values; snapshot %d bytes (%.0f per entry); index %d resident bytes per entry",
                       snapshotBytes, Double(snapshotBytes) / Double(count), perEntry)
    var open = Measurement(workload: "scale.index.\(count).open+get", ops: 1, seconds: openSeconds, bytes: 64)
    open.note = String(format: "cold, fresh process, median of 3: %.2f ms", openSeconds * 1e3)
    var replayed = Measurement(workload: "scale.index.\(count).replay", ops: records, seconds: replaySeconds, bytes: 0)
    replayed.note = String(format: "full journal replay at open (snapshot deleted): %.2f M records/s", Double(records) / replaySeconds / 1e6)
    return [fill, open, replayed]
}

/// The child side of the replay row: deletes the snapshot, opens the cache (replaying the whole
/// journal) and prints the records replayed and the seconds the open took (the close, which
/// writes a new snapshot, is not timed).
func replayOpen(directory: String) throws {
    try? FileManager.default.removeItem(atPath: directory + "/index")
    let start = now()
    let cache = try BlobCache(directory: directory)
    let seconds = now() - start
    print(cache.openReport.replayedRecords, seconds)
    try cache.close()
}
