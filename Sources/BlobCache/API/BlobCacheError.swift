import SystemPackage

/// Everything that can go wrong in BlobCache, each case with what a user needs to act on it.
///
///     do { try cache.set(bytes, forKey: "k") }
///     catch let error as BlobCacheError { print(error) }   // a one-line, actionable message
public enum BlobCacheError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The cache directory is missing, not a directory, or not writable, and could not be made so.
    case directoryUnusable(path: String, reason: String)
    /// Another open cache (this or another process) holds the single-writer lock.
    case inUse(path: String, pid: Int32?)
    /// A file operation failed.
    case io(operation: String, path: String, errno: Errno)
    /// A stored blob failed its checks (header, length, checksum, decompression or digest).
    /// The entries pointing at it have been dropped, so the next read is a plain miss.
    case corruptBlob(id: BlobID, path: String, reason: String)
    /// The journal or a pack was written by a newer BlobCache; it is left untouched.
    case unsupportedFormat(path: String, version: Int)
    /// A key was empty or too long.
    case invalidKey(reason: String)
    /// A single value is larger than the cache's byte limit, so it could never be stored.
    case valueTooLarge(storedBytes: Int, limit: Int)
    /// Pinned entries alone would exceed a limit, which pinned entries may not break.
    case pinnedEntriesExceedLimit(detail: String)
    /// A configuration value is out of range.
    case invalidConfiguration(reason: String)
    /// A journal write failed earlier (disk full, I/O error); the in-memory index may hold
    /// changes the journal does not, so the cache refuses work until it is reopened, which
    /// brings back the journaled state.
    case needsReopen(path: String, reason: String)
    /// The cache was closed.
    case closed

    public var description: String {
        switch self {
        case .directoryUnusable(let path, let reason):
            "cache directory \(path) is unusable: \(reason)"
        case .inUse(let path, let pid):
            "cache \(path) is in use by another process" + (pid.map { " (pid \($0))" } ?? "")
        case .io(let operation, let path, let errno):
            "\(operation) \(path) failed: \(errno.description)"
        case .corruptBlob(let id, let path, let reason):
            "blob \(id) at \(path) is corrupt: \(reason)"
        case .unsupportedFormat(let path, let version):
            "\(path) has format version \(version), newer than this BlobCache supports; left untouched"
        case .invalidKey(let reason):
            "invalid key: \(reason)"
        case .valueTooLarge(let stored, let limit):
            "value needs \(stored) bytes on disk, more than the cache limit of \(limit) bytes"
        case .pinnedEntriesExceedLimit(let detail):
            "pinned entries would exceed the cache limit: \(detail)"
        case .invalidConfiguration(let reason):
            "invalid configuration: \(reason)"
        case .needsReopen(let path, let reason):
            "cache \(path) stopped after a failed journal write (\(reason)); reopen it to continue from what was journaled"
        case .closed:
            "the cache is closed"
        }
    }
}
