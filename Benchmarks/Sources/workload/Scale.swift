import BlobCache
import Foundation

// `--workloads scale` (issue 15, "Scale"): what an operation costs in a large cache against a
// small one, and what a large index costs in memory, on disk and at open.
//
// Per-operation cost: W1-style puts then gets of N distinct small values of real data (keys
// are corpus paths made unique, values 256–2,047-byte slices of the corpus with their number
// written into the first 8 bytes, so that none dedups), for each N in SCALE_SIZES (default
// 10000,1000000). Gets go in one fixed random order, the same for every N, so that a large
// cache is read as a user would, not in the order it was written. SCALE_ROUNDS rounds (default
// 3) fill every size in turn, each in a fresh cache; a small size is filled several times a
// round (its median counts), so that it is not timed over a fraction of a second. Each size's put
// and get rows carry their median per-op cost relative to the smallest size's, each round's
// ratio, and a flag when the rounds spread over 30% of the median.
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
        let rounds = max(1, Int(ProcessInfo.processInfo.environment["SCALE_ROUNDS"] ?? "") ?? 3)
        let largest = counts.max() ?? 1
        // A small size is filled several times a round (up to 20, for at least a fifth of the
        // largest size's operations), so that its cost is not one phase of a fraction of a second.
        let fills = Dictionary(uniqueKeysWithValues: counts.map { ($0, max(1, min(20, largest / ($0 * 5)))) })
        let inputs = Dictionary(uniqueKeysWithValues: counts.map { ($0, (keys: scaleKeys($0, corpus: corpus), order: fixedShuffle($0))) })
        var perOp: [Int: [(put: Double, get: Double)]] = [:]
        var bytesOf: [Int: Int] = [:]
        for _ in 0..<rounds {
            for count in counts {
                var puts: [Double] = [], gets: [Double] = []
                for _ in 0..<fills[count]! {
                    let phase = try fillAndRead(options, count: count, keys: inputs[count]!.keys, order: inputs[count]!.order,
                                                all: all, buffer: buffer)
                    bytesOf[count] = phase.bytes
                    puts.append(phase.put / Double(count))
                    gets.append(phase.get / Double(count))
                }
                perOp[count, default: []].append((median(puts), median(gets)))
            }
        }
        for count in counts {
            func row(_ name: String, _ costs: [Double], _ baseCosts: [Double], bytes: Int) -> Measurement {
                let cost = median(costs)
                let each = zip(costs, baseCosts).map { String(format: "%.2f", $0 / $1) }.joined(separator: ", ")
                let flag = (costs.max()! - costs.min()!) / cost > 0.3 ? " ⚑ spread over 30%" : ""
                var measurement = Measurement(workload: "scale.\(count).\(name)", ops: count, seconds: cost * Double(count), bytes: bytes)
                measurement.note = String(format: "%.2f µs/op, median of %d rounds (each the median of %d fills); %.2f× the per-op cost at %d entries (each round: %@)%@",
                                          cost * 1e6, rounds, fills[count]!, cost / median(baseCosts), counts[0], each, flag)
                    + (name == "get" ? " (random order)" : "")
                return measurement
            }
            results.append(row("put", perOp[count]!.map(\.put), perOp[counts[0]]!.map(\.put), bytes: bytesOf[count]!))
            results.append(row("get", perOp[count]!.map(\.get), perOp[counts[0]]!.map(\.get), bytes: bytesOf[count]!))
        }
        for count in sizes("SCALE_INDEX_SIZES", [1_000_000, 10_000_000]) {
            results += try indexAtScale(options, count: count, corpus: corpus, all: all, buffer: buffer)
        }
    }
    return results
}

/// Puts `count` values into a fresh cache, then gets them all in `order`: the seconds of each
/// phase (the file system synced before each) and the bytes of the values.
private func fillAndRead(_ options: Options, count: Int, keys: [String], order: [Int], all: UnsafeRawBufferPointer,
                         buffer: UnsafeMutableRawBufferPointer) throws -> (put: Double, get: Double, bytes: Int) {
    let directory = freshDirectory(options.work, "scale-\(count)")
    let engine = try makeEngine(options, directory: directory)
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
    if !options.keepWork { try? FileManager.default.removeItem(atPath: directory) }
    return (putSeconds, getSeconds, bytes)
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
