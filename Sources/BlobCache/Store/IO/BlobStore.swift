import SystemPackage
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The blobs of one cache directory as the engine changes them, under its lock: publishing
/// staged loose files, appending pack records, and deleting what no entry needs any more.
/// Not thread-safe; readers get a `Location` under the lock and read through `BlobPipeline`.
final class BlobStore: @unchecked Sendable {
    let files: CacheFiles
    let io: FileIO
    let segmentLimit: Int64
    let synchronous: Bool

    /// How many segments a store keeps open (descriptors and mappings) besides the active one.
    static let openSegmentLimit = 64

    /// Every segment on disk and the bytes written to it (its file size), open or not: the
    /// set of segments, and the dead-space bound.
    private(set) var segmentSizes = SegmentMap<Int64>()
    /// The segments opened for reading, least recently used closed first.
    private var openSegments = OpenSegments(capacity: BlobStore.openSegmentLimit)
    /// The segment appended to, always open (read-write).
    private var activeSegment: PackSegment?
    private(set) var activeEnd: Int64 = 0
    /// Segments appended to since their last fsync, and whether `packs/` gained a name since.
    /// (By number: one closed since is opened again for its fsync, so that writing never holds
    /// a descriptor per segment written.)
    private var unsyncedSegments: Set<UInt32> = []
    private var packsDirectoryUnsynced = false
    /// Numbers handed to segments being written outside the lock (`reserveSegmentNumber`), and
    /// numbers of segments deleted or forgotten: never given again (another open may still
    /// hold the old file under that number).
    private var reservedNumbers: Set<UInt32> = []
    /// Counts the segments this store started, adopted, cut or deleted, so that an operation
    /// that changed only segments still moves the change sequence.
    private(set) var changes = 0

    /// Opens (creating `objects/` and `packs/` if needed) the blob store of `files`. Only the
    /// newest segment is opened; others are opened when first read (`segment(_:)`).
    init(files: CacheFiles, io: FileIO, segmentLimit: Int64, synchronous: Bool) throws {
        self.files = files
        self.io = io
        self.segmentLimit = segmentLimit
        self.synchronous = synchronous
        try io.makeDirectory(files.objects)
        try io.makeDirectory(files.packs)
        // In ascending order, so that each segment is appended to `segmentSizes`.
        for number in try io.listDirectory(files.packs).compactMap(PackFormat.segmentNumber(fromFileName:)).sorted() {
            // A link or a directory named like a segment is not one (fsck reports it), and its
            // number is never given to a new segment (which could not be renamed over it).
            // One larger than any segment a store writes is not one either (a sparse file can
            // claim exabytes, and summing such sizes would overflow).
            guard let size = try io.regularFileSize(files.segmentPath(number)), size <= PackFormat.maxSegmentSize else {
                reservedNumbers.insert(number)
                continue
            }
            segmentSizes[number] = size
        }
        if let newest = segmentSizes.keys.last {
            let path = files.segmentPath(newest)
            let fd = try io.open(path, .readWrite)
            let size = try io.fileSize(fd, path: path)
            activeSegment = PackSegment(number: newest, path: path, descriptor: fd,
                                        mappedLength: Int(max(size, segmentLimit)), io: io)
            activeEnd = size
            segmentSizes[newest] = size
        }
    }

    /// Stops counting segment `number`, whose file vanished or became something else: its
    /// records read as gone, no collection picks it again, and its number is never reused.
    private func forget(_ number: UInt32) {
        segmentSizes[number] = nil
        reservedNumbers.insert(number)
    }

    /// Whether any segment is on disk.
    var hasSegments: Bool { !segmentSizes.isEmpty }

    /// How many segments are open for reading (the active one aside).
    var openSegmentCount: Int { openSegments.count }

    /// How many segments the store holds open in all: for reading or for appends.
    var heldSegmentCount: Int {
        openSegments.numbers.union(activeSegment.map { [$0.number] } ?? []).count
    }

    /// The numbers of the segments on disk, in order.
    var segmentNumbers: [UInt32] { segmentSizes.keys }

    /// Segment `number`, opened read-only and mapped if it is not open yet (closing the least
    /// recently used one beyond `openSegmentLimit`); `nil` when the store has no such segment
    /// or its file is gone or is no longer a regular file.
    func segment(_ number: UInt32) throws -> PackSegment? {
        if let active = activeSegment, active.number == number { return active }
        if let open = openSegments.segment(number) { return open }
        guard let size = segmentSizes[number] else { return nil }
        let path = files.segmentPath(number)
        guard let fd = try io.openIfExists(path) else {
            forget(number)
            return nil
        }
        let fileSize: Int64?
        do { fileSize = try io.regularFileSize(of: fd, path: path) } catch {
            io.close(fd)
            throw error
        }
        guard let fileSize else {
            io.close(fd)
            forget(number)
            return nil
        }
        let segment = PackSegment(number: number, path: path, descriptor: fd,
                                  mappedLength: Int(min(size, fileSize)), io: io)
        openSegments.keep(segment)
        return segment
    }

    // MARK: Writing

    /// Appends a packed blob's record to the newest segment, starting a new one when full.
    func append(_ blob: PreparedBlob) throws -> BlobPlace {
        try blob.withImage { try appendRecord($0) }
    }

    /// Appends a whole record image; returns its place.
    func appendRecord(_ image: UnsafeRawBufferPointer) throws -> BlobPlace {
        let segment = try segmentWithRoom(for: image.count)
        let offset = activeEnd
        try io.writeAll(segment.descriptor, image, at: offset, path: segment.path)
        activeEnd += Int64(image.count)
        segmentSizes[segment.number] = activeEnd
        if synchronous {
            try io.sync(segment.descriptor, path: segment.path)
        } else {
            unsyncedSegments.insert(segment.number)
        }
        return .packed(segment: segment.number, offset: UInt64(offset))
    }

    private func segmentWithRoom(for count: Int) throws -> PackSegment {
        if let active = activeSegment, activeEnd + Int64(count) <= segmentLimit || activeEnd <= PackFormat.segmentHeaderSize {
            return active
        }
        return try startSegment()
    }

    /// Closes the active segment for appends and starts the next one. The segment gets its
    /// name only once its header is written (a staged file renamed into place), so no crash
    /// leaves a segment without a header.
    @discardableResult
    func startSegment() throws -> PackSegment {
        let number = nextSegmentNumber
        let path = files.segmentPath(number)
        let temporary = files.stagingPath(beside: path)
        let fd = try io.open(temporary, .readWrite, options: [.create, .exclusiveCreate, .noFollow],
                             permissions: io.filePermissions)
        do {
            try PackFormat.segmentHeader(number: number).withUnsafeBytes {
                try io.writeAll(fd, $0, at: 0, path: temporary)
            }
            if synchronous { try io.sync(fd, path: temporary) }
            try io.rename(temporary, to: path)
            if synchronous { try io.syncDirectory(files.packs) }
        } catch {
            io.close(fd)
            _ = try? io.remove(temporary)
            throw error
        }
        let segment = PackSegment(number: number, path: path, descriptor: fd, mappedLength: Int(segmentLimit), io: io)
        if !synchronous {
            unsyncedSegments.insert(number)
            packsDirectoryUnsynced = true
        }
        segmentSizes[number] = Int64(PackFormat.segmentHeaderSize)
        changes += 1
        if let previous = activeSegment { openSegments.keep(previous) }
        activeSegment = segment
        activeEnd = Int64(PackFormat.segmentHeaderSize)
        return segment
    }

    /// One past the highest number in use; once numbers run out (2^24), the lowest free one
    /// (open then appends to the highest-numbered segment, whose dead tail it trims). A number
    /// whose file exists is skipped: a process that crashed may have started a segment it never
    /// journaled, which this store does not know (docs/ARCHITECTURE.md, "Many processes").
    private var nextSegmentNumber: UInt32 {
        func taken(_ number: UInt32) -> Bool {
            segmentSizes[number] != nil || reservedNumbers.contains(number) || io.status(files.segmentPath(number)) != nil
        }
        var next = max(segmentSizes.keys.last ?? 0, reservedNumbers.max() ?? 0) + 1
        while next <= PackFormat.maxSegmentNumber, taken(next) { next += 1 }
        if next <= PackFormat.maxSegmentNumber { return next }
        var number: UInt32 = 1
        while taken(number) { number += 1 }
        return number
    }

    /// A number for a segment written outside the lock (pack collection), which no other
    /// segment gets until `adoptSegment` or `releaseReservation`.
    func reserveSegmentNumber() -> UInt32 {
        let number = nextSegmentNumber
        reservedNumbers.insert(number)
        return number
    }

    /// Gives back a reserved number whose segment was not adopted.
    func releaseReservation(_ number: UInt32) { reservedNumbers.remove(number) }

    /// Takes in a complete, fsynced segment written outside the lock under a reserved number,
    /// `end` bytes long. It takes the appends when it is the newest segment (so that the
    /// newest is always the one appended to, which open relies on to trim a torn tail).
    func adoptSegment(_ segment: PackSegment, end: Int64) {
        reservedNumbers.remove(segment.number)
        segmentSizes[segment.number] = end
        changes += 1
        if segment.number > (activeSegment?.number ?? 0) {
            if let previous = activeSegment { openSegments.keep(previous) }
            activeSegment = segment
            activeEnd = end
        } else {
            openSegments.keep(segment)
        }
    }

    /// Cuts the newest segment back to `end` (the end of the last record the index knows),
    /// dropping a torn or unreferenced tail so appends continue from a record boundary. Never
    /// extends it.
    func trimActiveSegment(to end: Int64) throws {
        guard let active = activeSegment else { return }
        let end = max(end, Int64(PackFormat.segmentHeaderSize))
        if end < activeEnd {
            changes += 1
            try io.truncate(active.descriptor, to: end, path: active.path)
            activeEnd = end
            segmentSizes[active.number] = end
        }
    }

    /// Whether segment `number` starts with its complete, checked header (a power cut while
    /// it was being started can leave it empty or zero-filled).
    func hasValidHeader(_ number: UInt32) throws -> Bool {
        guard let segment = try segment(number) else { return false }
        let header = try io.read(segment.descriptor, count: PackFormat.segmentHeaderSize, at: 0, path: segment.path)
        return header.withUnsafeBytes { PackFormat.checkSegmentHeader($0, number: number) } == nil
    }

    /// The newest segment's number, if any.
    var activeSegmentNumber: UInt32? { activeSegment?.number }

    /// Makes every record appended so far, and every new segment's name, durable: what must
    /// hold before the journal forgets an older copy (pack GC, recompression).
    func syncAll() throws {
        for number in unsyncedSegments.sorted() {
            // A segment closed since it was appended to is opened again: fsync flushes the
            // file, whichever descriptor wrote it.
            guard let segment = try segment(number) else {
                unsyncedSegments.remove(number)   // gone: nothing left to make durable
                continue
            }
            try io.sync(segment.descriptor, path: segment.path)
            unsyncedSegments.remove(number)
        }
        if packsDirectoryUnsynced {
            try io.syncDirectory(files.packs)
            packsDirectoryUnsynced = false
        }
    }

    // MARK: Other processes' changes

    /// Takes note of a record another process wrote (replayed from the journal): its segment
    /// exists and holds at least `end` bytes.
    func learn(segment number: UInt32, end: Int64) {
        reservedNumbers.remove(number)
        segmentSizes[number] = max(segmentSizes[number] ?? Int64(PackFormat.segmentHeaderSize), end)
    }

    /// Makes the newest segment this store knows the one appended to, at its file's end: other
    /// processes may have appended to it (a process that died mid-append leaves dead bytes,
    /// which appends go after) or started a newer one.
    func refreshActive() throws {
        guard let newest = segmentSizes.keys.last else { return }
        if activeSegment?.number != newest {
            let path = files.segmentPath(newest)
            guard let fd = try io.openIfExists(path, .readWrite) else {
                forget(newest)
                return try refreshActive()
            }
            if let previous = activeSegment { openSegments.keep(previous) }
            openSegments.close(newest)
            activeSegment = PackSegment(number: newest, path: path, descriptor: fd, mappedLength: Int(segmentLimit), io: io)
        }
        guard let active = activeSegment else { return }
        let status: stat
        do throws(Errno) { status = try io.system.status(active.descriptor) } catch {
            throw BlobCacheError.io(operation: "fstat", path: active.path.string, errno: error)
        }
        if status.st_nlink == 0 {
            // Another open collected it: never append to a file no name reaches.
            activeSegment = nil
            activeEnd = 0
            forget(active.number)
            return try refreshActive()
        }
        activeEnd = max(Int64(status.st_size), Int64(PackFormat.segmentHeaderSize))
        segmentSizes[newest] = activeEnd
    }

    /// Closes this store's descriptor of segment `number` when the file of that name is no
    /// longer the one it has open (collected, and the number given to a new file by an open
    /// that never knew the old one), so that records of the new file are read from it.
    func dropIfReplaced(_ number: UInt32) {
        // A segment file is never renamed away from its name, only unlinked: one that still
        // has a link is the file of that name (one `fstat`, no path lookup, in the common case),
        // and a file of that name beside one with none is another (whatever its inode number:
        // the old one's may have been given to it).
        guard let held = activeSegment?.number == number ? activeSegment : openSegments.peek(number),
              let open = try? io.system.status(held.descriptor), open.st_nlink == 0,
              io.status(files.segmentPath(number)) != nil else { return }
        openSegments.close(number)
        if activeSegment?.number == number {
            activeSegment = nil
            activeEnd = 0
        }
    }

    /// Lists `packs/` again: segments other processes started or deleted, and every size. Run
    /// before planning a collection, which must not count bytes that are gone.
    func rescan() throws {
        var found: [UInt32: Int64] = [:]
        for name in try io.listDirectory(files.packs) {
            guard let number = PackFormat.segmentNumber(fromFileName: name),
                  let size = try io.regularFileSize(files.segmentPath(number)), size <= PackFormat.maxSegmentSize else { continue }
            found[number] = size
        }
        for number in segmentSizes.keys where found[number] == nil {
            openSegments.close(number)
            unsyncedSegments.remove(number)
            forget(number)
        }
        for (number, size) in found {
            segmentSizes[number] = size
            reservedNumbers.remove(number)
        }
        if let active = activeSegment, segmentSizes[active.number] == nil {
            activeSegment = nil
            activeEnd = 0
        }
        try refreshActive()
    }

    /// Closes segment `number` if this store has it open for reading (readers holding it keep
    /// it until they finish): another process collected it, and an open descriptor would keep
    /// its disk space.
    func closeIfRetired(_ number: UInt32) {
        guard activeSegment?.number != number else { return }
        openSegments.close(number)
        if io.status(files.segmentPath(number)) == nil { forget(number) }
    }

    // MARK: Deleting segments (only from the engine's deferred list, after the journal allows it)

    /// Closes and deletes a segment none of whose records is live any more.
    func deleteSegment(_ number: UInt32) throws {
        guard segmentSizes.removeValue(forKey: number) != nil else { return }
        reservedNumbers.insert(number)
        changes += 1
        openSegments.close(number)
        unsyncedSegments.remove(number)
        if activeSegment?.number == number {
            activeSegment = nil
            activeEnd = 0
        }
        try io.remove(files.segmentPath(number))
    }
}
