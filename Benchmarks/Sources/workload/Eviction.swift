import BlobCache
import Foundation

/// `eviction`: the hit ratio and speed of each eviction policy on W5, W7 (W5 with a scan of
/// cold keys) and W8 (a shifting working set), at caps small enough that the policy decides
/// what stays (at W5's own cap, a quarter of the corpus, the traces evict nothing). Each trace
/// runs cache-aside, as W5 does: `G` gets, `P` puts, `S` gets and puts on a miss; a `G` that
/// misses does not insert, and a value larger than the cap is not stored. Rows are named `W7.segmentedLRU.cap32` (the cap a 1/32 of the
/// corpus bytes), with the hit ratio over every measured get. Policies alternate per trace
/// and cap, so both see the same machine.
func evictionRuns(_ options: Options, corpus: Corpus) throws -> [Measurement] {
    let corpusBytes = corpus.files.reduce(0) { $0 + $1.size }
    var results: [Measurement] = []
    for trace in ["w5", "w7", "w8"] {
        let ops = try EvictionTrace(path: options.corpus + "/\(trace)_trace.tsv")
        for divisor in [64, 32, 16] {
            for policy in EvictionPolicy.allCases {
                results.append(try replay(ops, named: "\(trace.uppercased()).\(policy).cap\(divisor)", corpus: corpus,
                                          cap: corpusBytes / divisor, policy: policy, options: options))
            }
        }
    }
    return results
}

/// A W5-format trace with `S` (scan: get, and put on a miss) as a third kind of op.
struct EvictionTrace {
    enum Op: UInt8 { case get, put, scan }
    var warmup = 0
    var ops: [(op: Op, index: Int)] = []

    init(path: String) throws {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else {
            throw WorkloadError.missingCorpus(path + " (python3 Benchmarks/corpus/make_traces.py writes it)")
        }
        for line in text.split(separator: "\n") {
            let fields = line.split(whereSeparator: { $0 == "\t" || $0 == " " })
            if line.hasPrefix("#") {
                if fields.count == 3, fields[1] == "warmup", let n = Int(fields[2]) { warmup = n }
                if fields.count == 2, fields[0] == "#warmup", let n = Int(fields[1]) { warmup = n }
                continue
            }
            guard fields.count == 2, let index = Int(fields[1]) else { throw WorkloadError.usage("bad trace line in \(path): \(line)") }
            ops.append((fields[0] == "P" ? .put : fields[0] == "S" ? .scan : .get, index))
        }
    }
}

private func replay(_ trace: EvictionTrace, named name: String, corpus: Corpus, cap: Int, policy: EvictionPolicy, options: Options) throws -> Measurement {
    let engine = try BlobCacheEngine(directory: freshDirectory(options.work, "eviction"), maxBytes: cap,
                                     compression: options.policy,
                                     packThreshold: options.packThreshold, eviction: policy)
    var hits = 0, gets = 0, bytes = 0
    settle()
    var start = now()
    try corpus.concat.withUnsafeBytes { all in
        for (n, step) in trace.ops.enumerated() {
            if n == trace.warmup { settle(); start = now(); hits = 0; gets = 0; bytes = 0 }
            let file = corpus.files[step.index]
            let value = UnsafeRawBufferPointer(rebasing: all[file.offset..<file.offset + file.size])
            if step.op != .put {
                gets += 1
                if let read = try engine.get(file.path) {
                    hits += 1
                    bytes += read
                    continue
                }
                if step.op == .get { continue }
            }
            // A file larger than the cap is not cached, as a cache-aside client would do on the
            // cache's refusal (the smallest cap is below the corpus's largest files).
            do {
                try engine.put(value, key: file.path)
                bytes += file.size
            } catch BlobCacheError.valueTooLarge {
                continue
            }
        }
    }
    let seconds = now() - start
    try engine.close()
    var measurement = Measurement(workload: name, ops: trace.ops.count - trace.warmup, seconds: seconds, bytes: bytes)
    measurement.hitRatio = Double(hits) / Double(max(1, gets))
    return measurement
}
