/// Keys of one directory that one core writes together, so that the directory is walked to
/// (and made) once for them rather than once per file.
struct ExportBatch: Sendable {
    /// The directory's components below the destination (none for the destination itself).
    let directory: [String]
    /// Each file: its key's index and its name in `directory`.
    var files: [(index: Int, name: String)]

    /// Files per batch at most: small enough that the cores share a large directory.
    static let limit = 64

    /// `keys` (safe relative paths, as `Export.isSafe` judges them) in batches, each of files
    /// in one directory; the batches in the order of their first key, so the cores take keys
    /// roughly in the order given (the order import stored them in, near each other on disk).
    ///
    ///     let batches = ExportBatch.batches(of: ["a/x", "b/y", "a/z"])   // a: x, z; b: y
    static func batches(of keys: [String]) -> [ExportBatch] {
        var batches: [ExportBatch] = []
        var open: [[UInt8]: Int] = [:]   // a directory's batch still taking files, by its bytes
        for (index, key) in keys.enumerated() {
            // At every `/` byte, as `Export.isSafe` judged the key: a `/` followed by a combining
            // mark is one `Character`, and a component holding it would reach `openat` with a `/`
            // inside, which follows whatever link is on the way.
            let bytes = Array(key.utf8)
            let cut = bytes.lastIndex(of: UInt8(ascii: "/"))
            let parent = cut.map { Array(bytes[..<$0]) } ?? []
            let name = String(decoding: cut.map { bytes[($0 + 1)...] } ?? bytes[...], as: UTF8.self)
            if let batch = open[parent], batches[batch].files.count < limit {
                batches[batch].files.append((index, name))
                continue
            }
            let components = parent.isEmpty ? [] : parent.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false)
                .map { String(decoding: $0, as: UTF8.self) }
            open[parent] = batches.count
            batches.append(ExportBatch(directory: components, files: [(index, name)]))
        }
        return batches
    }
}
