import SystemPackage

extension BlobCache {
    /// The limits saved in `directory/config`, which opens use where the configuration leaves
    /// a limit `nil` (like `ccache -M`). Missing file: no limits.
    ///
    ///     let saved = try BlobCache.defaultLimits(in: "/var/cache/app")
    public static func defaultLimits(in directory: String) throws -> Limits {
        try defaultLimits(in: CacheFiles(root: FilePath(directory)), io: .posix)
    }

    static func defaultLimits(in files: CacheFiles, io: FileIO) throws -> Limits {
        let path = files.config
        guard let bytes = try io.readWholeFile(path) else { return Limits() }
        var limits = Limits()
        for (number, line) in String(decoding: bytes, as: UTF8.self).split(separator: "\n").enumerated() {
            let text = line.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false)[0]
            if text.allSatisfy(\.isWhitespace) { continue }
            let parts = text.split(separator: "=", maxSplits: 1).map { String($0).trimmingWhitespace() }
            guard parts.count == 2, let value = Int(parts[1]), value > 0 else {
                throw BlobCacheError.invalidConfiguration(reason: "\(path) line \(number + 1): expected `name = positive integer`")
            }
            switch parts[0] {
            case "max-size": limits.maxStoredBytes = value
            case "max-entries": limits.maxEntries = value
            default:
                throw BlobCacheError.invalidConfiguration(reason: "\(path) line \(number + 1): unknown setting \(parts[0])")
            }
        }
        return limits
    }

    /// Saves default limits in `directory/config` (atomically); `nil` removes a limit.
    ///
    ///     try BlobCache.saveDefaultLimits(.init(maxStoredBytes: 2_000_000_000), in: "/var/cache/app")
    public static func saveDefaultLimits(_ limits: Limits, in directory: String) throws {
        let files = CacheFiles(root: FilePath(directory))
        try CacheDirectory.claim(files, io: .posix)
        let path = files.config
        var text = "# BlobCache default limits (bytes on disk of live blobs; entries)\n"
        if let size = limits.maxStoredBytes { text += "max-size = \(size)\n" }
        if let entries = limits.maxEntries { text += "max-entries = \(entries)\n" }
        _ = try Array(text.utf8).withUnsafeBytes { try FileIO.posix.matchingAccess(of: files.root).replaceAtomically(path, with: $0, durable: true) }
    }
}
