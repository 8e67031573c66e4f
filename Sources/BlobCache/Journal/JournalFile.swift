import SystemPackage

/// The open journal: records are framed into a pending buffer during one cache operation and
/// written with one `write` at its end, so a returned operation's records are in the kernel
/// (and on disk, when synchronous and the records change what a key holds).
final class JournalFile: @unchecked Sendable {
    let path: FilePath
    let io: FileIO
    private(set) var descriptor: FileDescriptor
    private(set) var header: JournalFormat.Header
    private var seed: UInt32
    private var pending = BinaryWriter(capacity: 4096)
    /// Bytes in the file, flushed records included.
    private(set) var size: Int64
    /// Records in the file plus pending ones.
    private(set) var recordCount: Int
    let synchronous: Bool
    /// Set when a write or sync failed: the caller's index may be ahead of the file from then on.
    private(set) var failure: BlobCacheError?
    /// Whether a pending record changes what a key holds (all but access records): a
    /// synchronous journal fsyncs those; recency alone is not worth an fsync on every read.
    private var pendingNeedsSync = false
    /// Bytes written since the last fsync.
    private(set) var unsynced = false

    init(path: FilePath, io: FileIO, descriptor: FileDescriptor, header: JournalFormat.Header, size: Int64,
         recordCount: Int, synchronous: Bool) {
        self.path = path
        self.io = io
        self.descriptor = descriptor
        self.header = header
        self.seed = JournalFormat.seed(salt: header.salt)
        self.size = size
        self.recordCount = recordCount
        self.synchronous = synchronous
    }

    deinit { io.close(descriptor) }

    /// Creates a new, empty journal at `path`.
    static func fresh(at path: FilePath, io: FileIO, created: Int64, synchronous: Bool) throws -> JournalFile {
        let written = try write([], to: path, io: io, created: created)
        return JournalFile(path: path, io: io, descriptor: written.descriptor, header: written.header, size: written.size,
                           recordCount: 0, synchronous: synchronous)
    }

    /// Whether records wait to be written.
    var hasPending: Bool { !pending.bytes.isEmpty }

    /// Frames `record` into the pending buffer.
    func append(_ record: JournalRecord) {
        JournalFormat.frame(record, seed: seed, into: &pending)
        recordCount += 1
        if case .access = record {} else { pendingNeedsSync = true }
    }

    /// Frames a `remove` record for the key whose UTF-8 is `keyBytes`: the same bytes as
    /// `append(.remove(key:reason:))`, without making a `String` (evictions run on every set
    /// at the cap).
    func appendRemove(keyBytes: UnsafeRawBufferPointer, reason: RemovalReason) {
        JournalFormat.frame(kind: .remove, seed: seed, into: &pending) {
            JournalRecord.encodeRemove(keyBytes: keyBytes, reason: reason, into: &$0)
        }
        recordCount += 1
        pendingNeedsSync = true
    }

    /// Writes the pending records with one `write` (and fsyncs when synchronous, unless they
    /// are only access records).
    func flush() throws {
        if let failure { throw failure }
        guard !pending.bytes.isEmpty else { return }
        let needsSync = pendingNeedsSync
        defer {
            pending.bytes.removeAll(keepingCapacity: true)
            pendingNeedsSync = false
        }
        do {
            try pending.bytes.withUnsafeBytes { try io.writeAll(descriptor, $0, at: size, path: path) }
        } catch {
            // Leave no partial record behind: the file ends at the last complete operation.
            try? io.truncate(descriptor, to: size, path: path)
            throw failed(error)
        }
        size += Int64(pending.bytes.count)
        unsynced = true
        if synchronous && needsSync { try syncWritten() }
    }

    /// Forces the journal to stable storage.
    func sync() throws {
        try flush()
        try syncWritten()
    }

    /// fsyncs what was written, if anything was since the last fsync.
    private func syncWritten() throws {
        guard unsynced else { return }
        try recordingFailure { try io.sync(descriptor, path: path) }
        unsynced = false
    }

    private func recordingFailure(_ body: () throws -> Void) throws {
        do { try body() } catch { throw failed(error) }
    }

    /// Stops the cache until it is reopened: something the pending records rely on (a pack
    /// fsync) failed, so they must never be written. Reopening replays what was written.
    func abandon(because error: any Error) {
        pending.bytes.removeAll(keepingCapacity: true)
        pendingNeedsSync = false
        _ = failed(error)
    }

    /// Whether `path` still names the file this journal appends to.
    private var namesOpenFile: Bool {
        guard let named = io.status(path), let open = try? io.system.status(descriptor) else { return false }
        return named.st_ino == open.st_ino && named.st_dev == open.st_dev
    }

    /// Remembers a failed write so that the cache stops until it is reopened.
    private func failed(_ error: any Error) -> any Error {
        failure = .needsReopen(path: path.removingLastComponent().string, reason: "\(error)")
        return error
    }

    /// Writes a new journal holding `records` to `journal.tmp`, fsyncs it, renames it over
    /// `path`, fsyncs the directory, and continues appending to it.
    /// A failure before the rename leaves the old journal in place and in use; after it (the
    /// directory fsync), the name holds the new file and the cache must reopen.
    func rewrite(with records: [JournalRecord], created: Int64) throws {
        if let failure { throw failure }
        let fresh: (descriptor: FileDescriptor, header: JournalFormat.Header, size: Int64)
        do {
            fresh = try Self.write(records, to: path, io: io, created: created)
        } catch {
            if !namesOpenFile { throw failed(error) }
            throw error
        }
        io.close(descriptor)
        unsynced = false
        pendingNeedsSync = false
        descriptor = fresh.descriptor
        header = fresh.header
        seed = JournalFormat.seed(salt: header.salt)
        size = fresh.size
        recordCount = records.count
        pending.bytes.removeAll(keepingCapacity: true)
    }

    /// Writes a complete journal atomically (via `journal.tmp`); returns it open for appending.
    static func write(_ records: [JournalRecord], to path: FilePath, io: FileIO, created: Int64)
        throws -> (descriptor: FileDescriptor, header: JournalFormat.Header, size: Int64) {
        let header = JournalFormat.Header(salt: UInt64.random(in: 1...UInt64.max), created: created)
        var writer = BinaryWriter(capacity: 64 + records.count * 96)
        writer.append(bytes: JournalFormat.encodeHeader(header))
        let seed = JournalFormat.seed(salt: header.salt)
        for record in records { JournalFormat.frame(record, seed: seed, into: &writer) }
        let fd = try writer.bytes.withUnsafeBytes { try io.replaceAtomically(path, with: $0, durable: true, keepOpen: true)! }
        return (fd, header, Int64(writer.bytes.count))
    }
}
