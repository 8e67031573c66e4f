import SystemPackage

/// The open journal: records are framed into a pending buffer during one cache operation and
/// written with one `write` at its end, so a returned operation's records are in the kernel
/// (and on disk, when synchronous and the records change what a key holds).
final class JournalFile: @unchecked Sendable {
    let path: CachePath
    let io: FileIO
    /// The open file appended to; held by reference so that an fsync outside the lock can keep
    /// it open across a rewrite.
    private(set) var file: OpenFile
    var descriptor: FileDescriptor { file.descriptor }
    private(set) var header: JournalFormat.Header
    private var seed: UInt32
    /// Seals the records of an encrypted journal; `nil` for a plain one. Changes only when a
    /// replacement sealed under another key is installed (rekeying).
    private(set) var cipher: CacheCipher?
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

    convenience init(path: CachePath, io: FileIO, descriptor: FileDescriptor, header: JournalFormat.Header, size: Int64,
                     recordCount: Int, synchronous: Bool, cipher: CacheCipher?) {
        self.init(path: path, io: io, file: OpenFile(descriptor: descriptor, path: path, io: io), header: header,
                  size: size, recordCount: recordCount, synchronous: synchronous, cipher: cipher)
    }

    private init(path: CachePath, io: FileIO, file: OpenFile, header: JournalFormat.Header, size: Int64,
                 recordCount: Int, synchronous: Bool, cipher: CacheCipher?) {
        self.cipher = cipher
        self.path = path
        self.io = io
        self.file = file
        self.header = header
        self.seed = JournalFormat.seed(salt: header.salt)
        self.size = size
        self.recordCount = recordCount
        self.synchronous = synchronous
    }

    /// Creates a new, empty journal at `path`.
    static func fresh(at path: CachePath, io: FileIO, created: Int64, synchronous: Bool, cipher: CacheCipher?) throws -> JournalFile {
        let replacement = try prepareReplacement(of: path, records: [], created: created, io: io, cipher: cipher)
        let journal = JournalFile(path: path, io: io, file: replacement.file, header: replacement.header,
                                  size: replacement.size, recordCount: 0, synchronous: synchronous, cipher: cipher)
        try io.rename(replacement.temporary, to: path)
        try io.syncDirectory(path.removingLastComponent())
        return journal
    }

    /// Takes in the records other processes appended since this journal's end (the caller
    /// replayed them): the file now ends at `end`, `count` records later.
    func adoptAppended(upTo end: Int64, count: Int) {
        size = end
        recordCount += count
    }

    /// Whether records wait to be written.
    var hasPending: Bool { !pending.bytes.isEmpty }

    /// Frames `record` into the pending buffer.
    func append(_ record: JournalRecord) {
        JournalFormat.frame(record, seed: seed, cipher: cipher, into: &pending)
        recordCount += 1
        switch record {
        case .access, .relocate: break
        default: pendingNeedsSync = true
        }
    }

    /// Frames a `remove` record for the key whose UTF-8 is `keyBytes`: the same bytes as
    /// `append(.remove(key:reason:))`, without making a `String` (evictions run on every set
    /// at the cap).
    func appendRemove(keyBytes: UnsafeRawBufferPointer, reason: RemovalReason) {
        JournalFormat.frame(kind: .remove, seed: seed, cipher: cipher, into: &pending) {
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

    /// Remembers a failed write so that the cache stops until it is reopened.
    private func failed(_ error: any Error) -> any Error {
        failure = .needsReopen(path: path.removingLastComponent().string, reason: "\(error)")
        return error
    }

    /// A compacted journal written and fsynced beside the journal (`journal.tmp`) but not in
    /// its place yet.
    struct Replacement: Sendable {
        /// The new file, named for error messages by the journal's path it will take.
        let file: OpenFile
        /// Where it is written until `install` renames it: `journal.tmp`.
        let temporary: CachePath
        let header: JournalFormat.Header
        let size: Int64
        let recordCount: Int
        /// What its records are sealed under (another key than the journal's when rekeying).
        let cipher: CacheCipher?
    }

    /// Writes `records` as a complete new journal to `journal.tmp` and fsyncs it. Touches
    /// nothing the open journal uses, so it runs outside the cache's lock (one at a time).
    ///
    /// Sealed under `cipher` when given.
    ///
    ///     let replacement = try JournalFile.prepareReplacement(of: path, records: records, created: now, io: io, cipher: nil)
    static func prepareReplacement(of path: CachePath, records: [JournalRecord], created: Int64, io: FileIO,
                                   cipher: CacheCipher?) throws -> Replacement {
        let header = JournalFormat.header(salt: UInt64.random(in: 1...UInt64.max), created: created, cipher: cipher)
        var writer = BinaryWriter(capacity: 64 + records.count * 96)
        writer.append(bytes: JournalFormat.encodeHeader(header))
        let seed = JournalFormat.seed(salt: header.salt)
        for record in records { JournalFormat.frame(record, seed: seed, cipher: cipher, into: &writer) }
        let temporary = CacheFiles.temporary(for: path)
        _ = try io.remove(temporary)
        let file = OpenFile(descriptor: try io.open(temporary, .readWrite, options: [.create, .exclusiveCreate, .noFollow],
                                                    permissions: io.filePermissions),
                            path: path, io: io)
        do {
            try writer.bytes.withUnsafeBytes { try io.writeAll(file.descriptor, $0, at: 0, path: temporary) }
            try io.sync(file.descriptor, path: temporary)
        } catch {
            _ = try? io.remove(temporary)
            throw error
        }
        return Replacement(file: file, temporary: temporary, header: header, size: Int64(writer.bytes.count),
                           recordCount: records.count, cipher: cipher)
    }

    /// Puts `replacement` in the journal's place: the records written since byte `mark` (when
    /// the replacement's records were taken) are framed anew behind its own, and it is renamed
    /// over the journal; appends go to it from then on. When synchronous, it is fsynced before
    /// the rename and the directory after it, here: an acknowledged write must not land in a
    /// file whose name could still revert. Otherwise the caller finishes with
    /// `Replacement.makeDurable` (outside the lock), before any maintenance relies on it.
    /// A failure before the rename leaves the old journal in use and deletes the replacement;
    /// after it, the cache must reopen (which reads whichever file the name holds: both are
    /// complete, and a torn tail is cut).
    func install(_ replacement: Replacement, recordsSince mark: Int64) throws {
        var newSize = replacement.size, newCount = replacement.recordCount
        do {
            try flush()
            if size > mark {
                let tail = try io.read(descriptor, count: Int(size - mark), at: mark, path: path)
                var reframed = BinaryWriter(capacity: tail.count)
                let newSeed = JournalFormat.seed(salt: replacement.header.salt)
                let walk = tail.withUnsafeBytes {
                    JournalReader.walk(records: $0, at: Int(mark), salt: header.salt, cipher: cipher) { record, _ in
                        JournalFormat.frame(record, seed: newSeed, cipher: replacement.cipher, into: &reframed)
                        return true
                    }
                }
                // Bytes this journal wrote itself since `mark` that no longer read back whole.
                guard walk.end == .clean else { throw BlobCacheError.io(operation: "read", path: path.string, errno: .ioError) }
                try reframed.bytes.withUnsafeBytes {
                    try io.writeAll(replacement.file.descriptor, $0, at: newSize, path: replacement.temporary)
                }
                newSize += Int64(reframed.bytes.count)
                newCount += walk.records
            }
            if synchronous { try io.sync(replacement.file.descriptor, path: replacement.temporary) }
            try io.rename(replacement.temporary, to: path)
        } catch {
            _ = try? io.remove(replacement.temporary)
            throw error
        }
        file = replacement.file
        unsynced = !synchronous
        header = replacement.header
        cipher = replacement.cipher
        seed = JournalFormat.seed(salt: header.salt)
        size = newSize
        recordCount = newCount
        if synchronous { try syncInstalledReplacement(replacement) }
    }

    /// Makes an installed replacement durable: its records and its name. A failure stops the
    /// cache until reopen.
    func syncInstalledReplacement(_ replacement: Replacement) throws {
        do { try replacement.makeDurable(io: io) } catch { throw failed(error) }
    }
}

extension JournalFile.Replacement {
    /// fsyncs the installed file and the directory that names it (no journal state is touched,
    /// so it runs outside the lock; on failure the caller stops the journal).
    func makeDurable(io: FileIO) throws {
        try file.sync()
        try io.syncDirectory(file.path.removingLastComponent())
    }
}

extension JournalFile {
    /// The header of the journal in `files`, read without the lock; `nil` when there is no
    /// journal, it is not a regular file (a FIFO would block the open), cannot be read, or its
    /// header does not decode (the open then says why, or rebuilds and judges the blobs).
    static func peekHeader(files: CacheFiles, io: FileIO) -> JournalFormat.Header? {
        guard (try? io.fileType(files.journal)) == .regular, let fd = try? io.openIfExists(files.journal) else { return nil }
        defer { io.close(fd) }
        guard let image = try? io.read(fd, count: JournalFormat.headerSize, at: 0, path: files.journal),
              case .success(let header) = image.withUnsafeBytes({ JournalFormat.decodeHeader($0) }) else { return nil }
        return header
    }
}
