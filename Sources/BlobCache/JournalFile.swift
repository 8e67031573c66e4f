import SystemPackage

/// The open journal: records are framed into a pending buffer during one cache operation and
/// written with one `write` at its end, so a returned operation's records are in the kernel.
final class JournalFile: @unchecked Sendable {
    let path: FilePath
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

    init(path: FilePath, descriptor: FileDescriptor, header: JournalFormat.Header, size: Int64,
         recordCount: Int, synchronous: Bool) {
        self.path = path
        self.descriptor = descriptor
        self.header = header
        self.seed = JournalFormat.seed(salt: header.salt)
        self.size = size
        self.recordCount = recordCount
        self.synchronous = synchronous
    }

    deinit { try? descriptor.close() }

    /// Frames `record` into the pending buffer.
    func append(_ record: JournalRecord) {
        JournalFormat.frame(record, seed: seed, into: &pending)
        recordCount += 1
    }

    /// Frames a `remove` record for the key whose UTF-8 is `keyBytes`: the same bytes as
    /// `append(.remove(key:reason:))`, without making a `String` (evictions run on every set
    /// at the cap).
    func appendRemove(keyBytes: UnsafeRawBufferPointer, reason: RemovalReason) {
        JournalFormat.frame(kind: .remove, seed: seed, into: &pending) {
            JournalRecord.encodeRemove(keyBytes: keyBytes, reason: reason, into: &$0)
        }
        recordCount += 1
    }

    /// Writes the pending records with one `write` (and fsyncs when synchronous).
    func flush() throws {
        guard !pending.bytes.isEmpty else { return }
        defer { pending.bytes.removeAll(keepingCapacity: true) }
        do {
            try pending.bytes.withUnsafeBytes { try FileIO.writeAll(descriptor, $0, at: size, path: path) }
        } catch {
            // Leave no partial record behind: the file ends at the last complete operation.
            try? FileIO.truncate(descriptor, to: size, path: path)
            throw failed(error)
        }
        size += Int64(pending.bytes.count)
        if synchronous { try recordingFailure { try FileIO.sync(descriptor, path: path) } }
    }

    /// Forces the journal to stable storage.
    func sync() throws {
        try flush()
        try recordingFailure { try FileIO.sync(descriptor, path: path) }
    }

    private func recordingFailure(_ body: () throws -> Void) throws {
        do { try body() } catch { throw failed(error) }
    }

    /// Remembers a failed write so that the cache stops until it is reopened.
    private func failed(_ error: any Error) -> any Error {
        failure = .needsReopen(path: path.removingLastComponent().string, reason: "\(error)")
        return error
    }

    /// Writes a new journal holding `records` to `journal.tmp`, fsyncs it, renames it over
    /// `path`, fsyncs the directory, and continues appending to it.
    func rewrite(with records: [JournalRecord], created: Int64) throws {
        let fresh = try Self.write(records, to: path, created: created)
        try? descriptor.close()
        descriptor = fresh.descriptor
        header = fresh.header
        seed = JournalFormat.seed(salt: header.salt)
        size = fresh.size
        recordCount = records.count
        pending.bytes.removeAll(keepingCapacity: true)
    }

    /// Writes a complete journal atomically (via `journal.tmp`); returns it open for appending.
    static func write(_ records: [JournalRecord], to path: FilePath, created: Int64)
        throws -> (descriptor: FileDescriptor, header: JournalFormat.Header, size: Int64) {
        let header = JournalFormat.Header(salt: UInt64.random(in: 1...UInt64.max), created: created)
        let temporary = FilePath(path.string + ".tmp")
        var writer = BinaryWriter(capacity: 64 + records.count * 96)
        writer.append(bytes: JournalFormat.encodeHeader(header))
        let seed = JournalFormat.seed(salt: header.salt)
        for record in records { JournalFormat.frame(record, seed: seed, into: &writer) }
        let fd = try FileIO.open(temporary, .readWrite, options: [.create, .truncate],
                                 permissions: [.ownerReadWrite, .groupRead, .otherRead])
        do {
            try writer.bytes.withUnsafeBytes { try FileIO.writeAll(fd, $0, at: 0, path: temporary) }
            try FileIO.sync(fd, path: temporary)
            try FileIO.rename(temporary, to: path)
            try FileIO.syncDirectory(path.removingLastComponent())
        } catch {
            try? fd.close()
            throw error
        }
        return (fd, header, Int64(writer.bytes.count))
    }
}
