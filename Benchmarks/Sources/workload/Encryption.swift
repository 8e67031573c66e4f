import BlobCache
import Crypto
import Foundation

// `--workloads encryption` (issue 16): W1, W2 and W3 put and get with encryption off and on,
// interleaved (the order alternates each round), `ENCRYPTION_ROUNDS` rounds (default 3);
// each row is the median of its rounds, the `.aes` rows' notes give the ratio to the plain
// row of the same round, per round and median. Then gets alone in closely paired passes
// (`pairedGets`), and AES-256-GCM alone, sealing and opening
// 1 MiB in memory (swift-crypto, one core): the limit the W3 rows are measured against.

let encryptionRounds = ProcessInfo.processInfo.environment["ENCRYPTION_ROUNDS"].flatMap { Int($0) }.map { max(1, $0) } ?? 3

/// The benchmarks' key (any key costs the same).
let benchmarkKey = SymmetricKey(size: .bits256)

func encryptionComparison(_ options: Options, corpus: Corpus) throws -> [Measurement] {
    var samples: [String: [Double]] = [:]
    var template: [String: Measurement] = [:]
    let w2 = try Corpus.blobs(options.corpus + "/synth_4k.bin", size: 4096, count: 10_000)
    let w3 = try Corpus.blobs(options.corpus + "/synth_1m.bin", size: 1 << 20, count: 1000)
    for round in 0..<encryptionRounds {
        for encrypted in round % 2 == 0 ? [false, true] : [true, false] {
            var setting = options
            setting.encrypted = encrypted
            var rows: [Measurement] = []
            try corpus.concat.withUnsafeBytes { all in
                rows += try putThenGet("W1", setting, keys: corpus.files.map(\.path)) { index in
                    let file = corpus.files[index]
                    return UnsafeRawBufferPointer(rebasing: all[file.offset..<file.offset + file.size])
                }
            }
            for (name, blobs, size) in [("W2", w2, 4096), ("W3", w3, 1 << 20)] {
                let flat = blobs.flatMap { $0 }
                try flat.withUnsafeBytes { all in
                    rows += try putThenGet(name, setting, keys: blobs.map(md5Hex)) {
                        UnsafeRawBufferPointer(rebasing: all[($0 * size)..<(($0 + 1) * size)])
                    }
                }
            }
            for row in rows where !row.workload.hasSuffix("fsck") {
                let name = row.workload + (encrypted ? ".aes" : "")
                samples[name, default: []].append(row.seconds)
                template[name] = row
            }
        }
    }
    var results: [Measurement] = []
    for name in template.keys.filter({ !$0.hasSuffix(".aes") }).sorted() {
        let plain = template[name]!, sealed = template[name + ".aes"]!
        results.append(Measurement(workload: name, ops: plain.ops, seconds: median(samples[name]!), bytes: plain.bytes,
                                   storedBytes: plain.storedBytes))
        // Throughput ratio encrypted / plain, per round (paired) and the median.
        let ratios = zip(samples[name]!, samples[name + ".aes"]!).map { $0 / $1 }
        var row = Measurement(workload: name + ".aes", ops: sealed.ops, seconds: median(samples[name + ".aes"]!),
                              bytes: sealed.bytes, storedBytes: sealed.storedBytes)
        row.note = "vs plain: median \(String(format: "%.2f", median(ratios)))× (rounds: "
            + ratios.map { String(format: "%.2f", $0) }.joined(separator: ", ") + ")"
        results.append(row)
    }
    results += try pairedGets(options, w2: w2, w3: w3)
    results += aesAlone()
    return results
}

/// `--workloads encryption-gets`: the paired get passes alone, in a process that has loaded
/// nothing else (W2's 10,000 values of 4 KiB and the first 200 of W3's values of 1 MiB, no W1
/// corpus, no put rounds): a one-minute check of the get ratios. (Whether opening each seal
/// into a second buffer made the allocator trim and refault memory depends on a process's
/// allocation history; this process does not show it, before or after the change.)
func encryptionGetsAlone(_ options: Options) throws -> [Measurement] {
    let w2 = try Corpus.blobs(options.corpus + "/synth_4k.bin", size: 4096, count: 10_000)
    let w3 = try Corpus.blobs(options.corpus + "/synth_1m.bin", size: 1 << 20, count: 200)
    return try pairedGets(options, w2: w2, w3: w3)
}

/// Gets alone, paired closely: W2 and W3 are stored once with encryption off and once on,
/// then `ENCRYPTION_GET_PASSES` (default 9) passes over every key alternate between the two
/// caches (the order flipping each pass). A W2 pass takes about 30 ms, short enough for this
/// machine's noise to swing one round's ratio from 0.4 to 1.3; adjacent pairs see the same
/// conditions. Rows `W2.get.paired.aes` and `W3.get.paired.aes`: the median pass, with the
/// median of the per-pair ratios in the note.
private func pairedGets(_ options: Options, w2: [[UInt8]], w3: [[UInt8]]) throws -> [Measurement] {
    let passes = ProcessInfo.processInfo.environment["ENCRYPTION_GET_PASSES"].flatMap { Int($0) }.map { max(1, $0) } ?? 9
    var results: [Measurement] = []
    for (name, blobs) in [("W2", w2), ("W3", w3)] {
        let keys = blobs.map(md5Hex)
        var engines: [Engine] = []
        for encrypted in [false, true] {
            var setting = options
            setting.encrypted = encrypted
            // Memory tier off: every get reads, checks and opens from disk.
            let engine = try makeEngine(setting, directory: freshDirectory(options.work, name + (encrypted ? ".paired.aes" : ".paired")),
                                        memoryLimit: 0)
            for (key, blob) in zip(keys, blobs) { try blob.withUnsafeBytes { try engine.put($0, key: key) } }
            engines.append(engine)
        }
        var seconds: [[Double]] = [[], []]
        let bytes = blobs.reduce(0) { $0 + $1.count }
        settle()
        for pass in 0..<passes {
            for which in pass % 2 == 0 ? [0, 1] : [1, 0] {
                var read = 0
                let start = now()
                for key in keys { read += try engines[which].get(key) ?? 0 }
                seconds[which].append(now() - start)
                precondition(read == bytes, "\(name): read \(read) bytes, stored \(bytes)")
            }
        }
        for engine in engines { try engine.close() }
        let ratios = zip(seconds[0], seconds[1]).map { $0 / $1 }
        results.append(Measurement(workload: name + ".get.paired", ops: keys.count, seconds: median(seconds[0]), bytes: bytes))
        var row = Measurement(workload: name + ".get.paired.aes", ops: keys.count, seconds: median(seconds[1]), bytes: bytes)
        row.note = "vs plain: median \(String(format: "%.2f", median(ratios)))× (\(passes) passes: "
            + ratios.map { String(format: "%.2f", $0) }.joined(separator: ", ") + ")"
        results.append(row)
    }
    return results
}

/// AES-256-GCM sealing and opening 1 MiB, 1,000 times each, in memory: MB/s of one core.
private func aesAlone() -> [Measurement] {
    let value = [UInt8](repeating: 0x5A, count: 1 << 20)
    var sealed: [AES.GCM.SealedBox] = []
    let start = now()
    for _ in 0..<1000 { sealed.append(try! AES.GCM.seal(value, using: benchmarkKey)) }
    let sealSeconds = now() - start
    let openStart = now()
    var opened = 0
    for box in sealed { opened += try! AES.GCM.open(box, using: benchmarkKey).count }
    let openSeconds = now() - openStart
    precondition(opened == 1000 << 20)
    return [Measurement(workload: "AES-GCM.seal 1MiB", ops: 1000, seconds: sealSeconds, bytes: 1000 << 20),
            Measurement(workload: "AES-GCM.open 1MiB", ops: 1000, seconds: openSeconds, bytes: 1000 << 20)]
}
