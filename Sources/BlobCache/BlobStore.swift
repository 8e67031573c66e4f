import SystemPackage
#if canImport(Glibc)
import Glibc
#endif

/// A blob hashed and encoded, with its on-disk image (header included) ready to write.
struct PreparedBlob: Sendable {
    let id: BlobID
    let rawLength: Int
    let codec: CodecTag
    let payloadLength: Int
    /// The encoder's buffer: from `imageStart` on, header + payload exactly as the file or pack
    /// record holds it (a loose header is shorter than the headroom left for a record's, and
    /// the bytes before it are skipped rather than moved).
    let buffer: [UInt8]
    let imageStart: Int
    let packed: Bool

    /// Bytes on disk: the record or the file.
    var imageCount: Int { buffer.count - imageStart }

    /// Calls `body` with the on-disk image.
    func withImage<Result>(_ body: (UnsafeRawBufferPointer) throws -> Result) rethrows -> Result {
        try buffer.withUnsafeBytes { try body(UnsafeRawBufferPointer(rebasing: $0[imageStart...])) }
    }
}

/// A loose blob written under a temporary name, waiting to be published (or discarded).
struct StagedLooseBlob: Sendable {
    let temporary: FilePath
    let final: FilePath
}

/// The blobs of one cache directory: loose files in `objects/a/b/<id>` and records in
/// `packs/NNNNNN.pack`. Not thread-safe: the cache calls the mutating parts under its lock;
/// the static parts (prepare, stage, read) run outside it.
final class BlobStore: @unchecked Sendable {
    let root: FilePath
    let objects: FilePath
    let packs: FilePath
    /// Blobs whose stored size is below this go into packs; 0 packs nothing.
    let packThreshold: Int
    let segmentLimit: Int64
    let synchronous: Bool

    private(set) var segments: [UInt32: PackSegment] = [:]
    private var activeSegment: PackSegment?
    private(set) var activeEnd: Int64 = 0
    /// Bytes written to each segment (its file size), for the dead-space bound.
    private(set) var segmentSizes: [UInt32: Int64] = [:]

    /// Opens (creating `objects/` and `packs/` if needed) the blob store in `root`.
    init(root: FilePath, packThreshold: Int, segmentLimit: Int64, synchronous: Bool) throws {
        self.root = root
        self.objects = root.appending("objects")
        self.packs = root.appending("packs")
        self.packThreshold = packThreshold
        self.segmentLimit = segmentLimit
        self.synchronous = synchronous
        try FileIO.makeDirectory(objects)
        try FileIO.makeDirectory(packs)
        for name in FileIO.listDirectory(packs) {
            guard let number = PackFormat.segmentNumber(fromFileName: name) else { continue }
            let path = packs.appending(name)
            let fd = try FileIO.open(path, .readWrite)
            let size = try FileIO.fileSize(fd, path: path)
            segments[number] = PackSegment(number: number, path: path, descriptor: fd,
                                           mappedLength: Int(max(size, segmentLimit)))
            segmentSizes[number] = size
        }
        if let newest = segments.keys.max() {
            activeSegment = segments[newest]
            activeEnd = segmentSizes[newest] ?? 0
        }
    }

    // MARK: Names

    /// `objects/<a>/<b>/<id>` for a loose blob.
    static func loosePath(of id: BlobID, in objects: FilePath) -> FilePath {
        let hex = id.hex
        let first = String(hex.prefix(1)), second = String(hex.dropFirst().prefix(1))
        return objects.appending(first).appending(second).appending(hex)
    }

    func loosePath(of id: BlobID) -> FilePath { Self.loosePath(of: id, in: objects) }

    /// Whether a file name is a temporary one a writer uses before publishing.
    static func isTemporaryName(_ name: String) -> Bool { name.hasPrefix("tmp.") }

    /// A human-readable location for reports.
    func describe(_ info: BlobInfo) -> String {
        switch info.place {
        case .loose: loosePath(of: info.id).string
        case .packed(let segment, let offset): packs.appending(PackFormat.fileName(of: segment)).string + "@\(offset)"
        }
    }

    // MARK: Writing

    /// Encodes `value` and builds its on-disk image for the blob `id`.
    static func prepare(_ value: UnsafeRawBufferPointer, id: BlobID, codec: Codec, packThreshold: Int) -> PreparedBlob {
        frame(encode(value, codec: codec), id: id, rawLength: value.count, packThreshold: packThreshold)
    }

    /// Compresses `value` with room for either header in front; `first` runs alongside.
    static func encode(_ value: UnsafeRawBufferPointer, codec: Codec, first: (() -> Void)? = nil) -> Compression.Encoded {
        Compression.encode(value, codec: codec, headroom: PackFormat.recordHeaderSize, first: first)
    }

    /// Hashes and compresses `value`: a large one is hashed on one core while the others
    /// compress it (the hashing core joins in after).
    static func hashAndPrepare(_ value: UnsafeRawBufferPointer, codec: Codec, packThreshold: Int) -> PreparedBlob {
        var id: BlobID?
        let encoded = encode(value, codec: codec, first: { id = BlobID(hashing: value) })
        return frame(encoded, id: id!, rawLength: value.count, packThreshold: packThreshold)
    }

    /// Places an encoded blob by its stored size and writes the matching header.
    static func frame(_ encoded: Compression.Encoded, id: BlobID, rawLength: Int, packThreshold: Int) -> PreparedBlob {
        let packed = encoded.payloadCount + PackFormat.recordHeaderSize < packThreshold
            && encoded.payloadCount <= Int(UInt32.max)
        var buffer = encoded.buffer
        let imageStart: Int
        if packed {
            imageStart = 0
            PackFormat.writeRecordHeader(into: &buffer, id: id, codec: encoded.tag, rawLength: rawLength)
        } else {
            imageStart = PackFormat.recordHeaderSize - LooseBlobFormat.headerSize
            LooseBlobFormat.writeHeader(into: &buffer, at: imageStart, codec: encoded.tag, rawLength: rawLength)
        }
        return PreparedBlob(id: id, rawLength: rawLength, codec: encoded.tag, payloadLength: encoded.payloadCount,
                            buffer: buffer, imageStart: imageStart, packed: packed)
    }

    /// Writes a loose blob under a temporary name in its shard directory (outside the lock).
    static func stage(_ blob: PreparedBlob, objects: FilePath, synchronous: Bool) throws -> StagedLooseBlob {
        let final = loosePath(of: blob.id, in: objects)
        let directory = final.removingLastComponent()
        let temporary = directory.appending("tmp.\(getpid()).\(UInt64.random(in: 0...UInt64.max) & 0xffff_ffff_ffff)")
        let fd: FileDescriptor
        do {
            fd = try FileDescriptor.open(temporary, .writeOnly, options: [.create, .exclusiveCreate, .closeOnExec],
                                         permissions: [.ownerReadWrite, .groupRead, .otherRead], retryOnInterrupt: true)
        } catch Errno.noSuchFileOrDirectory {
            try FileIO.makeDirectory(directory.removingLastComponent())
            try FileIO.makeDirectory(directory)
            fd = try FileIO.open(temporary, .writeOnly, options: [.create, .exclusiveCreate],
                                 permissions: [.ownerReadWrite, .groupRead, .otherRead])
        } catch let errno as Errno {
            throw BlobCacheError.io(operation: "create", path: temporary.string, errno: errno)
        }
        do {
            try blob.withImage { try FileIO.writeAll(fd, $0, path: temporary) }
            if synchronous { try FileIO.sync(fd, path: temporary) }
            try fd.close()
        } catch {
            try? fd.close()
            _ = try? FileIO.remove(temporary)
            throw error
        }
        return StagedLooseBlob(temporary: temporary, final: final)
    }

    /// Renames a staged blob to its name (under the lock, so it is ordered with deletions).
    func publish(_ staged: StagedLooseBlob) throws {
        try FileIO.rename(staged.temporary, to: staged.final)
        if synchronous { try FileIO.syncDirectory(staged.final.removingLastComponent()) }
    }

    /// Appends a packed blob's record to the newest segment, starting a new one when full.
    func append(_ blob: PreparedBlob) throws -> BlobPlace {
        try blob.withImage { try appendRecord($0) }
    }

    /// Appends a whole record image; returns its place.
    func appendRecord(_ image: UnsafeRawBufferPointer) throws -> BlobPlace {
        let segment = try segmentWithRoom(for: image.count)
        let offset = activeEnd
        try FileIO.writeAll(segment.descriptor, image, at: offset, path: segment.path)
        activeEnd += Int64(image.count)
        segmentSizes[segment.number] = activeEnd
        if synchronous { try FileIO.sync(segment.descriptor, path: segment.path) }
        return .packed(segment: segment.number, offset: UInt64(offset))
    }

    private func segmentWithRoom(for count: Int) throws -> PackSegment {
        if let active = activeSegment, activeEnd + Int64(count) <= segmentLimit || activeEnd <= PackFormat.segmentHeaderSize {
            return active
        }
        return try startSegment()
    }

    /// Closes the active segment for appends and starts the next one.
    @discardableResult
    func startSegment() throws -> PackSegment {
        let number = (segments.keys.max() ?? 0) + 1
        let path = packs.appending(PackFormat.fileName(of: number))
        let fd = try FileIO.open(path, .readWrite, options: [.create, .truncate],
                                 permissions: [.ownerReadWrite, .groupRead, .otherRead])
        let segment = PackSegment(number: number, path: path, descriptor: fd, mappedLength: Int(segmentLimit))
        try PackFormat.segmentHeader(number: number).withUnsafeBytes {
            try FileIO.writeAll(fd, $0, at: 0, path: path)
        }
        if synchronous {
            try FileIO.sync(fd, path: path)
            try FileIO.syncDirectory(packs)
        }
        segments[number] = segment
        segmentSizes[number] = Int64(PackFormat.segmentHeaderSize)
        activeSegment = segment
        activeEnd = Int64(PackFormat.segmentHeaderSize)
        return segment
    }

    /// Cuts the newest segment back to `end` (the end of the last record the index knows),
    /// dropping a torn or unreferenced tail so appends continue from a record boundary.
    func trimActiveSegment(to end: Int64) throws {
        guard let active = activeSegment else { return }
        let end = max(end, Int64(PackFormat.segmentHeaderSize))
        if activeEnd != end {
            try FileIO.truncate(active.descriptor, to: end, path: active.path)
            activeEnd = end
            segmentSizes[active.number] = end
        }
    }

    /// The newest segment's number, if any.
    var activeSegmentNumber: UInt32? { activeSegment?.number }

    /// Deletes a loose blob file.
    func deleteLoose(_ id: BlobID) throws {
        try FileIO.remove(loosePath(of: id))
    }

    /// Closes and deletes a segment none of whose records is live any more.
    func deleteSegment(_ number: UInt32) throws {
        guard let segment = segments.removeValue(forKey: number) else { return }
        segmentSizes[number] = nil
        if activeSegment?.number == number {
            activeSegment = nil
            activeEnd = 0
        }
        try FileIO.remove(segment.path)
    }

    /// Flushes the newest segment and the directories (used before the journal forgets a place).
    func syncAll() throws {
        if let active = activeSegment { try FileIO.sync(active.descriptor, path: active.path) }
        try FileIO.syncDirectory(packs)
    }

    // MARK: Reading

    /// What a reader needs to fetch a blob without holding the cache lock.
    enum Location: Sendable {
        case loose(FilePath)
        /// In `segment` at `offset`; the segment had `writtenEnd` bytes when the read began.
        case packed(PackSegment, offset: UInt64, writtenEnd: Int64)
    }

    func location(of info: BlobInfo) -> Location? {
        switch info.place {
        case .loose: return .loose(loosePath(of: info.id))
        case .packed(let number, let offset):
            guard let segment = segments[number] else { return nil }
            return .packed(segment, offset: offset, writtenEnd: segmentSizes[number] ?? 0)
        }
    }

    /// Reads and checks a blob; `.failure` says how it is damaged (or missing).
    static func read(_ info: BlobInfo, at location: Location?) throws -> Result<[UInt8], BlobDamage> {
        switch location {
        case nil:
            return .failure(.missing("its pack segment is gone"))
        case .loose(let path):
            guard let file = try FileIO.readWholeFile(path) else { return .failure(.missing("file is missing")) }
            return file.withUnsafeBytes { LooseBlobFormat.decode(file: $0, expecting: info) }
        case .packed(let segment, let offset, let writtenEnd):
            return try segment.readValue(at: offset, expecting: info, writtenEnd: writtenEnd)
        }
    }
}
