import Foundation

// Workloads that interleave gets and puts in a fixed order, so that every engine
// (Benchmarks/peers.py runs the same sequence in C and Python) replays exactly the same calls.

/// The W2 90/10 mix: the first `mixedPreload` of W2's 4 KiB blobs are put untimed; then
/// `mixedOps` operations are timed, where operation n is a put of the next blob not yet stored
/// when n % 10 == 9 (every put a new key and a new value: no overwrite or dedup shortcut) and
/// otherwise a get of a stored blob drawn by `MixedSequence` (every get a hit).
let mixedPreload = 5_000
let mixedOps = 50_000

/// The draw of W2-mixed's get indices: a 64-bit LCG (Knuth's MMIX constants), index =
/// (state >> 33) % stored. Benchmarks/native/bench_common.h and Benchmarks/peers.py repeat it.
struct MixedSequence {
    private var state: UInt64 = 0x9E37_79B9_7F4A_7C15
    mutating func next(below bound: Int) -> Int {
        state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
        return Int((state >> 33) % UInt64(bound))
    }
}

/// W2.mixed for `--workloads w2mixed`: one measurement; its note is the sum of the get indices,
/// which every engine's run prints so that peers.py can check they replayed the same sequence.
func w2Mixed(_ options: Options) throws -> [Measurement] {
    let blobs = try Corpus.blobs(options.corpus + "/synth_4k.bin", size: 4096, count: 10_000)
    let keys = blobs.map(md5Hex)
    let engine = try makeEngine(options, directory: freshDirectory(options.work, "W2mixed"))
    for index in 0..<mixedPreload { try blobs[index].withUnsafeBytes { try engine.put($0, key: keys[index]) } }
    var sequence = MixedSequence()
    var stored = mixedPreload, bytes = 0, hits = 0, gets = 0, digest = 0
    let flat = blobs.flatMap { $0 }
    settle()
    let start = now()
    try flat.withUnsafeBytes { all in
        for n in 0..<mixedOps {
            if n % 10 == 9 {
                try engine.put(UnsafeRawBufferPointer(rebasing: all[(stored * 4096)..<((stored + 1) * 4096)]), key: keys[stored])
                stored += 1
                bytes += 4096
            } else {
                let index = sequence.next(below: stored)
                digest += index
                gets += 1
                if let read = try engine.get(keys[index]) { hits += 1; bytes += read }
            }
        }
    }
    let seconds = now() - start
    try engine.close()
    var measurement = Measurement(workload: "W2.mixed", ops: mixedOps, seconds: seconds, bytes: bytes)
    measurement.hitRatio = Double(hits) / Double(max(1, gets))
    measurement.note = "sequence \(digest)"
    return [measurement]
}

/// W5 without a cap (`--workloads w5nocap`): the W5 trace replayed with no eviction, on either
/// engine; ops/s over the measured ops and hit ratio (gets of keys the trace has not put yet miss).
func w5Uncapped(_ options: Options, corpus: Corpus) throws -> [Measurement] {
    [try w5(options, corpus: corpus, uncapped: true)]
}
