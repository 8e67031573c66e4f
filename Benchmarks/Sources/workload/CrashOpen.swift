import BlobCache
import Foundation

// The first open after a crash (issue 15, target 7: ≤ 150 ms for a 1 M-entry cache). A child
// process puts N values of 64 bytes into a fresh cache and exits without closing it, as a
// process that crashes would (no close: no snapshot written at close, no recency persisted).
// A second fresh process then times its open, which restores the last snapshot written while
// the cache was in use, if any, and replays the journal after it.

/// The child that fills `directory` with `count` values and dies with the cache open.
func crashFill(directory: String, count: Int) throws -> Never {
    let cache = try BlobCache(directory: directory)
    var value = [UInt8](repeating: 0x5A, count: 64)
    for number in 0..<count {
        withUnsafeBytes(of: UInt64(number).littleEndian) { value.replaceSubrange(0..<8, with: $0) }
        try cache.set(value, forKey: "crash/\(number)")
    }
    // No close: whatever the cache did not write by now is lost, as in a crash.
    _exit(0)
}

/// The child that times the first open: prints the seconds, the records replayed and the
/// entries the open found.
func crashOpen(directory: String) throws {
    let start = now()
    let cache = try BlobCache(directory: directory)
    let seconds = now() - start
    print(seconds, cache.openReport.replayedRecords, try cache.totals().entries)
    try cache.close()
}

/// `crash-open` rows for each N in SCALE_CRASH_SIZES (default 1000000): the first open after
/// the fill's crash, in a fresh process (fill, crash and open repeated `rounds` times, median).
func crashOpens(_ options: Options, rounds: Int = 3) throws -> [Measurement] {
    var results: [Measurement] = []
    let counts = (ProcessInfo.processInfo.environment["SCALE_CRASH_SIZES"] ?? "1000000")
        .split(separator: ",").compactMap { Int($0.trimmingCharacters(in: .whitespaces)) }.filter { $0 > 0 }
    for count in counts {
        var samples: [(seconds: Double, replayed: Int)] = []
        for _ in 0..<rounds {
            let directory = freshDirectory(options.work, "crash-\(count)")
            defer { if !options.keepWork { try? FileManager.default.removeItem(atPath: directory) } }
            _ = try runChild(["crash-fill", directory, String(count)])
            settle()
            let said = try runChild(["crash-open", directory])
            guard said.count == 3, let seconds = Double(said[0]), let replayed = Int(said[1]), Int(said[2]) == count else {
                throw WorkloadError.usage("crash-open said: \(said)")
            }
            samples.append((seconds, replayed))
        }
        let sorted = samples.sorted { $0.seconds < $1.seconds }
        let middle = sorted[sorted.count / 2]
        var row = Measurement(workload: "scale.index.\(count).crash-open", ops: 1, seconds: middle.seconds, bytes: 0)
        row.note = String(format: "first open after a crash, fresh process, median of %d: %.1f ms, %d records replayed (each: %@)",
                          rounds, middle.seconds * 1e3, middle.replayed,
                          samples.map { String(format: "%.1f ms/%d", $0.seconds * 1e3, $0.replayed) }.joined(separator: ", "))
        results.append(row)
    }
    return results
}
