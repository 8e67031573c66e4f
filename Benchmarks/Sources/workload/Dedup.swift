// Dedup-heavy puts: every value is set once, then (timed) set again under a new key, so each
// timed put finds its MD5 stored and confirms the stored bytes before sharing the blob.

/// Puts `count` values (`value(i)`), then times putting each again under a second key.
func dedupPuts(_ name: String, _ options: Options, count: Int, value: (Int) -> UnsafeRawBufferPointer) throws -> [Measurement] {
    let directory = freshDirectory(options.work, name)
    let engine = try makeEngine(options, directory: directory)
    for index in 0..<count { try engine.put(value(index), key: "first/\(index)") }
    let keys = (0..<count).map { "again/\($0)" }
    var bytes = 0
    settle()
    let start = now()
    for index in 0..<count {
        let slice = value(index)
        try engine.put(slice, key: keys[index])
        bytes += slice.count
    }
    let seconds = now() - start
    let stored = engine.storedBytes
    try engine.close()
    return [Measurement(workload: "\(name).put", ops: count, seconds: seconds, bytes: bytes, storedBytes: stored)]
}
