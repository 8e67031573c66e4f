import BlobCache

// `--workloads w3stream`: W3's 1,000 values of 1 MiB through the streaming API (a PendingSet fed
// 64 KiB at a time; reads in checked chunks), to set beside W3's whole-value puts and gets in
// the same run. `--workloads big`: 8 values of 64 MiB set and read whole, then streamed (named
// B64.whole and B64.stream): what streaming costs where it stores pieces.

/// BlobCache through its streaming calls: `startSet`/`append`/`finish` and `forEachChunk`.
final class StreamingEngine: Engine {
    let inner: BlobCacheEngine
    init(_ inner: BlobCacheEngine) { self.inner = inner }

    func put(_ value: UnsafeRawBufferPointer, key: String) throws {
        let pending = try inner.cache.startSet(forKey: key)
        var offset = 0
        repeat {
            let end = min(offset + (64 << 10), value.count)
            try pending.append(UnsafeRawBufferPointer(rebasing: value[offset..<end]))
            offset = end
        } while offset < value.count
        try pending.finish()
    }

    func get(_ key: String) throws -> Int? {
        var count = 0
        guard try inner.cache.forEachChunk(forKey: key, { count += $0.count }) else { return nil }
        return count
    }

    func close() throws { try inner.close() }
    var storedBytes: Int? { inner.storedBytes }
}

/// W3 through the streaming calls, as `W3s`.
func w3Streaming(_ options: Options) throws -> [Measurement] {
    let blobs = try Corpus.blobs(options.corpus + "/synth_1m.bin", size: 1 << 20, count: 1000)
    let flat = blobs.flatMap { $0 }
    var streaming = options
    streaming.streaming = true
    return try flat.withUnsafeBytes { all in
        try putThenGet("W3s", streaming, keys: blobs.map(md5Hex)) {
            UnsafeRawBufferPointer(rebasing: all[($0 << 20)..<(($0 + 1) << 20)])
        }
    }
}

/// 8 values of 64 MiB (W3's megabytes, each value a different run of them), whole then streamed.
func bigValues(_ options: Options) throws -> [Measurement] {
    let blobs = try Corpus.blobs(options.corpus + "/synth_1m.bin", size: 1 << 20, count: 1000)
    let values: [[UInt8]] = (0..<8).map { index in (0..<64).flatMap { blobs[(index * 97 + $0 * 13) % blobs.count] } }
    var results: [Measurement] = []
    for streamed in [false, true] {
        var setting = options
        setting.streaming = streamed
        let flat = values.flatMap { $0 }
        try flat.withUnsafeBytes { all in
            results += try putThenGet(streamed ? "B64.stream" : "B64.whole", setting, keys: (0..<8).map { "big/\($0)" }) {
                UnsafeRawBufferPointer(rebasing: all[($0 * (64 << 20))..<(($0 + 1) * (64 << 20))])
            }
        }
    }
    return results
}
