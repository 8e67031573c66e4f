import SystemPackage

/// Everything that can go wrong in BlobCache, each case with what a user needs to act on it.
///
///     do { try cache.set(bytes, forKey: "k") }
///     catch let error as BlobCacheError { print(error) }   // a one-line, actionable message
public enum BlobCacheError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The cache directory is missing, not a directory, or not writable, and could not be made
    /// so; or it is not empty and not a BlobCache cache (no BlobCache journal, no
    /// `CACHEDIR.TAG` naming BlobCache), so it is left alone.
    case directoryUnusable(path: String, reason: String)
    /// Another open cache (this or another process) holds the single-writer lock.
    case inUse(path: String, pid: Int32?)
    /// A file operation failed.
    case io(operation: String, path: String, errno: Errno)
    /// A stored blob is missing or failed its checks: header (including a format version, codec
    /// or checksum kind this BlobCache does not know), length, checksum or decompression (fsck
    /// also checks the digest). The entries pointing at it have been dropped (reason `damaged`),
    /// so the next read is a plain miss.
    case corruptBlob(id: BlobID, path: String, reason: String)
    /// The journal's header (magic and checksum intact) names a format version newer than this
    /// BlobCache reads. The open fails before anything is replayed or repaired; the journal,
    /// blobs and segments are left as they are. Blobs, pack records and snapshots of unknown
    /// versions are not reported this way (docs/FORMAT.md, "Unknown versions").
    case unsupportedFormat(path: String, version: Int)
    /// A key was empty or too long.
    case invalidKey(reason: String)
    /// A single value is larger than the cache's byte limit, so it could never be stored.
    case valueTooLarge(storedBytes: Int, limit: Int)
    /// Pinned entries alone would exceed a limit, which pinned entries may not break.
    case pinnedEntriesExceedLimit(detail: String)
    /// A configuration value is out of range, or a line of `DIR/config` is malformed or names
    /// an unknown setting.
    case invalidConfiguration(reason: String)
    /// A journal write failed earlier (disk full, I/O error); the in-memory index may hold
    /// changes the journal does not, so the cache refuses work until it is reopened, which
    /// brings back the journaled state.
    case needsReopen(path: String, reason: String)
    /// The cache is encrypted (its journal header says so) and the open gave no key
    /// (`Configuration.encryption`, CLI `--key-file`). Nothing on disk was changed.
    case encryptionKeyRequired(path: String)
    /// The key given does not match the one the cache is encrypted under (the journal header's
    /// key check). Nothing on disk was changed.
    case wrongEncryptionKey(path: String)
    /// A key was given for a cache that is not encrypted. Nothing on disk was changed; open it
    /// without a key (`compact(rekeyingTo:)` encrypts a plain cache).
    case cacheNotEncrypted(path: String)
    /// A set's value has the MD5 of a stored blob but other bytes (an MD5 collision, such as
    /// the public 128-byte pairs). The set was refused: nothing stored changed, and the key
    /// keeps what it held before. Never thrown by an encrypted cache, whose ids are keyed.
    ///
    ///     catch BlobCacheError.contentCollision(let id) { print("refused: collides with \(id)") }
    case contentCollision(id: BlobID)
    /// The cache was closed.
    case closed
    /// A `PendingSet` was used after it finished, failed or was cancelled.
    case setEnded

    /// A one-line message naming what failed and what to fix (the CLI prints it).
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
            "\(path) has journal format version \(version); this BlobCache reads up to \(JournalFormat.version). The cache was not opened and the journal was left as it is"
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
        case .encryptionKeyRequired(let path):
            "cache \(path) is encrypted: give its key (--key-file or $BLOBCACHE_KEY_FILE); nothing was changed"
        case .wrongEncryptionKey(let path):
            "cache \(path) is encrypted under another key: the key given does not match; nothing was changed"
        case .cacheNotEncrypted(let path):
            "cache \(path) is not encrypted, but a key was given: open it without one (compact --rekey encrypts it); nothing was changed"
        case .contentCollision(let id):
            "value refused: its MD5 is \(id.hex), the name of a stored value with other bytes (an MD5 collision); nothing was changed"
        case .closed:
            "the cache is closed"
        case .setEnded:
            "this pending set has already finished, failed or been cancelled"
        }
    }
}
