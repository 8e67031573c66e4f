import SystemPackage

extension BlobCache {
    /// The limits saved in `directory/config`, which opens use where the configuration leaves
    /// a limit `nil` (like `ccache -M`). Missing file: no limits.
    ///
    ///     let saved = try BlobCache.defaultLimits(in: "/var/cache/app")
    public static func defaultLimits(in directory: String) throws -> Limits {
        try defaultLimits(in: CacheFiles(root: CachePath(normalizing: directory)), io: .posix)
    }

    static func defaultLimits(in files: CacheFiles, io: FileIO) throws -> Limits {
        let path = files.config
        let bytes: [UInt8]?
        do { bytes = try io.readWholeFile(path, atMost: maxConfigBytes) } catch BlobCacheError.io(_, _, .fileTooLarge) {
            throw BlobCacheError.invalidConfiguration(reason: "\(path) is larger than \(maxConfigBytes) bytes")
        }
        guard let bytes else { return Limits() }
        return try parseLimits(bytes, path: path)
    }

    /// The limits a `config` file's bytes set: `name = value` lines (`max-size`, `max-entries`;
    /// a size may be written `2G` or `500Mi`), `#` comments; a typed error for anything else.
    static func parseLimits(_ bytes: [UInt8], path: CachePath) throws(BlobCacheError) -> Limits {
        var limits = Limits()
        for (number, line) in String(decoding: bytes, as: UTF8.self).split(separator: "\n").enumerated() {
            let text = line.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false)[0]
            if text.allSatisfy(\.isWhitespace) { continue }
            let parts = text.split(separator: "=", maxSplits: 1).map { String($0).trimmingWhitespace() }
            let place = "\(path) line \(number + 1)"
            guard parts.count == 2 else {
                throw .invalidConfiguration(reason: "\(place): expected `name = positive integer`")
            }
            switch parts[0] {
            case "max-size":
                guard let size = try? ByteSize.parse(parts[1]), size > 0 else {
                    throw .invalidConfiguration(reason: "\(place): max-size must be a positive size such as 2G")
                }
                limits.maxStoredBytes = size
            case "max-entries":
                guard let count = Int(parts[1]), count > 0 else {
                    throw .invalidConfiguration(reason: "\(place): expected `name = positive integer`")
                }
                limits.maxEntries = count
            default:
                throw .invalidConfiguration(reason: "\(place): unknown setting \(parts[0])")
            }
        }
        return limits
    }

    /// The longest `config` file read (a real one is two lines).
    static let maxConfigBytes: Int64 = 64 << 10

    /// Saves default limits in `directory/config` (atomically); `nil` removes a limit.
    ///
    ///     try BlobCache.saveDefaultLimits(.init(maxStoredBytes: 2_000_000_000), in: "/var/cache/app")
    public static func saveDefaultLimits(_ limits: Limits, in directory: String) throws {
        let files = CacheFiles(root: CachePath(normalizing: directory))
        try CacheDirectory.claim(files, io: .posix)
        let path = files.config
        var text = "# BlobCache default limits (bytes on disk of live blobs; entries)\n"
        if let size = limits.maxStoredBytes { text += "max-size = \(size)\n" }
        if let entries = limits.maxEntries { text += "max-entries = \(entries)\n" }
        _ = try Array(text.utf8).withUnsafeBytes { try FileIO.posix.matchingAccess(of: files.root).replaceAtomically(path, with: $0, durable: true) }
    }
}
