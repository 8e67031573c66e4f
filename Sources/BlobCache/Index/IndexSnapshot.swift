import SystemPackage
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The index snapshot file (`DIR/index`, docs/FORMAT.md): the index as replay left it after a
/// given length of journal, laid out as it lies in memory, so that open maps the file and uses
/// it in place, then replays only the journal after that length.
/// Derived data: whatever is wrong with it, open falls back to replaying the whole journal.
/// Its body is checked in 16 KiB chunks, each with its own digest, so that a lookup before the
/// restore (`SnapshotLookup`) checks only the chunks it reads.
enum IndexSnapshot {
    static let magic: [UInt8] = Array("BCIX".utf8)
    /// 2: chunk digests, and the totals an open needs before restoring (expiry, bytes, newest segment).
    static let version: UInt32 = 2
    /// Bytes of body each digest covers (the last chunk may be shorter).
    static let chunkSize = 16 << 10
    /// The header takes the first page; every section starts on a page boundary, so that each
    /// can be used where it is mapped.
    static let page = 4096
    /// Why a snapshot another release wrote (another record layout) is not used: not damage,
    /// the open replays the journal instead.
    static let otherLayout = "written by a build that lays the index out differently"
    static let fileName = "index"

    /// What a snapshot says about itself.
    struct Header: Equatable {
        let seed: UInt64
        let journalSalt: UInt64
        /// Bytes of the journal (header included) that were replayed into it.
        let journalLength: Int64
        /// Records in those bytes (to know how redundant the journal is without counting).
        let journalRecords: Int
        let entryCount: Int
        let blobCount: Int
        let keyBytes: Int
        let oldest: Int32
        let newest: Int32
        /// XXH64 of the chunk digests, which cover everything between the header page and them.
        let bodyDigest: UInt64
        /// No entry expires before this time (`Int64.max` with no entries).
        let earliestExpiry: Int64
        /// Every blob's footprint, summed (what the byte cap counts).
        let storedBytes: Int
        /// The highest pack segment number any blob lies in (`CacheIndex.Blob.loose`: none), and
        /// the end of the furthest record in it: what the open may trim that segment back to.
        let lastSegment: UInt32
        let lastSegmentEnd: Int64
        /// Written by an index whose order may be a segmented LRU's (`CacheIndex.orderFromSegments`),
        /// which a journal replayed as LRU does not reproduce; restored, it protects used entries.
        var segmented = false

        var keyBuckets: Int { SlotTable.size(forCapacity: entryCount) }
        var blobBuckets: Int { SlotTable.size(forCapacity: blobCount) }
        var entriesOffset: Int { page }
        var blobsOffset: Int { pageAligned(entriesOffset + entryCount * MemoryLayout<CacheIndex.Entry>.stride) }
        var keysOffset: Int { pageAligned(blobsOffset + blobCount * MemoryLayout<CacheIndex.Blob>.stride) }
        var keyTableOffset: Int { pageAligned(keysOffset + keyBytes) }
        var blobTableOffset: Int { pageAligned(keyTableOffset + bucketSize * keyBuckets) }
        /// Where the chunk digests start: the end of the body they cover.
        var digestsOffset: Int { pageAligned(blobTableOffset + bucketSize * blobBuckets) }
        var chunkCount: Int { (digestsOffset - page + chunkSize - 1) / chunkSize }
        var fileSize: Int { digestsOffset + 8 * chunkCount }
        private var bucketSize: Int { MemoryLayout<SlotTable.Bucket>.stride }
    }

    private static func pageAligned(_ offset: Int) -> Int { (offset + page - 1) / page * page }

    /// A field of the header page: where it lies, and its type, which gives its size.
    private struct Field<Value: FixedWidthInteger> {
        let offset: Int

        func load(from image: UnsafeRawBufferPointer) -> Value {
            Value(littleEndian: image.loadUnaligned(fromByteOffset: offset, as: Value.self))
        }

        func store(_ value: Value, into out: UnsafeMutableRawBufferPointer) {
            out.storeBytes(of: value.littleEndian, toByteOffset: offset, as: Value.self)
        }
    }

    /// The header page's fields (docs/FORMAT.md), each named once, so that what
    /// `encodeHeader` writes and `parseHeader` reads cannot disagree on an offset or a size.
    private enum HeaderField {
        /// `magic`'s 4 bytes.
        static let magic = 0
        static let version = Field<UInt32>(offset: 4)
        static let layoutSignature = Field<UInt64>(offset: 8)
        static let seed = Field<UInt64>(offset: 16)
        static let journalSalt = Field<UInt64>(offset: 24)
        static let journalLength = Field<Int64>(offset: 32)
        static let journalRecords = Field<UInt64>(offset: 40)
        static let entryCount = Field<UInt64>(offset: 48)
        static let blobCount = Field<UInt64>(offset: 56)
        static let keyBytes = Field<UInt64>(offset: 64)
        static let oldest = Field<Int32>(offset: 72)
        static let newest = Field<Int32>(offset: 76)
        static let bodyDigest = Field<UInt64>(offset: 80)
        static let earliestExpiry = Field<Int64>(offset: 88)
        static let storedBytes = Field<UInt64>(offset: 96)
        static let lastSegment = Field<UInt32>(offset: 104)
        /// Bit 0: the order may be a segmented LRU's (`CacheIndex.orderFromSegments`).
        static let flags = Field<UInt32>(offset: 108)
        static let lastSegmentEnd = Field<Int64>(offset: 112)
        /// CRC32 of every byte of the page before it.
        static let crc = Field<UInt32>(offset: IndexSnapshot.page - 4)
    }

    // MARK: Writing

    /// The snapshot file's bytes for `index`, which reflects the first `journalLength` bytes
    /// (`journalRecords` records) of the journal whose salt is `journalSalt`. Entries are
    /// renumbered in journal order (pinned first, then least to most recently used), blobs in
    /// order of first use, keys packed, and the tables built for those numbers.
    static func encode(_ index: CacheIndex, journalSalt: UInt64, journalLength: Int64, journalRecords: Int) -> [UInt8] {
        let order = index.journalOrder()
        let firstUnpinned = order.firstIndex { !index.entry(at: $0).pinned } ?? order.count
        var blobNumber = [Int32](repeating: -1, count: index.blobs.count)
        var blobs: [CacheIndex.Blob] = []
        var entries: [CacheIndex.Entry] = []
        var keys: [UInt8] = []
        entries.reserveCapacity(order.count)
        for (number, slot) in order.enumerated() {
            var entry = index.entry(at: slot)
            if blobNumber[Int(entry.blob)] < 0 {
                blobNumber[Int(entry.blob)] = Int32(blobs.count)
                blobs.append(index.blob(at: entry.blob))
            }
            entry.blob = blobNumber[Int(entry.blob)]
            entry.unmovedSinceRewrite = false
            entry.keyOffset = UInt32(keys.count)
            index.withKeyBytes(at: slot) { keys.append(contentsOf: $0) }
            entry.older = entry.pinned || number == firstUnpinned ? -1 : Int32(number - 1)
            entry.newer = entry.pinned || number == order.count - 1 ? -1 : Int32(number + 1)
            entries.append(entry)
        }
        var keyTable = SlotTable(capacity: entries.count), blobTable = SlotTable(capacity: blobs.count)
        for (number, entry) in entries.enumerated() {
            keyTable.insert(Int32(number), hash: UInt64(entry.keyHash))
        }
        for (number, blob) in blobs.enumerated() {
            blobTable.insert(Int32(number), hash: KeyHash.hash(blob.id, seed: index.seed))
        }
        let (lastSegment, lastSegmentEnd) = Self.lastSegment(of: index)
        let header = Header(seed: index.seed, journalSalt: journalSalt, journalLength: journalLength,
                            journalRecords: journalRecords, entryCount: entries.count, blobCount: blobs.count,
                            keyBytes: keys.count, oldest: firstUnpinned < order.count ? Int32(firstUnpinned) : -1,
                            newest: firstUnpinned < order.count ? Int32(order.count - 1) : -1, bodyDigest: 0,
                            earliestExpiry: entries.lazy.map(\.expiry).min() ?? Int64.max, storedBytes: index.storedBytes,
                            lastSegment: lastSegment, lastSegmentEnd: lastSegmentEnd, segmented: index.orderFromSegments)
        var file = [UInt8](repeating: 0, count: header.fileSize)
        file.withUnsafeMutableBytes { out in
            func put(_ bytes: UnsafeRawBufferPointer, at offset: Int) {
                if let source = bytes.baseAddress { (out.baseAddress! + offset).copyMemory(from: source, byteCount: bytes.count) }
            }
            entries.withUnsafeBytes { put($0, at: header.entriesOffset) }
            blobs.withUnsafeBytes { put($0, at: header.blobsOffset) }
            keys.withUnsafeBytes { put($0, at: header.keysOffset) }
            keyTable.withSavedBuckets { put($0, at: header.keyTableOffset) }
            blobTable.withSavedBuckets { put($0, at: header.blobTableOffset) }
            encodeHeader(header, bodyDigest: writeDigests(into: out, header: header), into: out)
        }
        return file
    }

    /// Writes the chunk digests of the image `out` laid out as `header` says; returns their hash.
    private static func writeDigests(into out: UnsafeMutableRawBufferPointer, header: Header) -> UInt64 {
        for chunk in 0..<header.chunkCount {
            out.storeBytes(of: chunkDigest(UnsafeRawBufferPointer(out), chunk: chunk, header: header).littleEndian,
                           toByteOffset: header.digestsOffset + 8 * chunk, as: UInt64.self)
        }
        return XXHash64.hash(UnsafeRawBufferPointer(rebasing: out[header.digestsOffset...]))
    }

    #if BLOBCACHE_TESTING
    /// Makes every checksum of `image` match its bytes again (digests, their hash, the header
    /// CRC), as a forger without a key could; `false` when its header does not parse even then.
    /// For tests and fuzzing: the consistency checks alone must then refuse what is wrong.
    static func reseal(_ image: inout [UInt8]) -> Bool {
        guard image.count >= page else { return false }
        func sealHeader() {
            let crc = image.withUnsafeBytes { CRC32.checksum(UnsafeRawBufferPointer(rebasing: $0[0..<HeaderField.crc.offset])) }
            image.withUnsafeMutableBytes { HeaderField.crc.store(crc, into: $0) }
        }
        sealHeader()
        guard case .success(let header) = image.withUnsafeBytes({ parseHeader($0) }) else { return false }
        image.withUnsafeMutableBytes { out in
            HeaderField.bodyDigest.store(writeDigests(into: out, header: header), into: out)
        }
        sealHeader()
        return true
    }
    #endif

    /// The highest segment number a blob of `index` lies in (`CacheIndex.Blob.loose`: none) and
    /// the end of the furthest record in it.
    static func lastSegment(of index: CacheIndex) -> (number: UInt32, end: Int64) {
        var last = (number: CacheIndex.Blob.loose, end: Int64(0))
        index.forEachBlob { blob in
            guard blob.segment != CacheIndex.Blob.loose else { return }
            let end = Int64(blob.offset) + Int64(blob.info.footprint)
            if last.number == CacheIndex.Blob.loose || blob.segment > last.number {
                last = (blob.segment, end)
            } else if blob.segment == last.number {
                last.end = max(last.end, end)
            }
        }
        return last
    }

    /// The digest of body chunk `chunk` of the snapshot image `image`: XXH64 seeded with the
    /// chunk's number (so that chunks cannot trade places).
    static func chunkDigest(_ image: UnsafeRawBufferPointer, chunk: Int, header: Header) -> UInt64 {
        let start = page + chunk * chunkSize
        return XXHash64.hash(UnsafeRawBufferPointer(rebasing: image[start..<min(start + chunkSize, header.digestsOffset)]),
                             seed: UInt64(chunk))
    }

    /// Whether every chunk of `image` matches its digest and the digests their hash in the header.
    static func bodyIsIntact(_ image: UnsafeRawBufferPointer, header: Header) -> Bool {
        guard XXHash64.hash(UnsafeRawBufferPointer(rebasing: image[header.digestsOffset...])) == header.bodyDigest else {
            return false
        }
        return (0..<header.chunkCount).allSatisfy { chunk in
            chunkDigest(image, chunk: chunk, header: header)
                == UInt64(littleEndian: image.loadUnaligned(fromByteOffset: header.digestsOffset + 8 * chunk, as: UInt64.self))
        }
    }

    static func encodeHeader(_ header: Header, bodyDigest: UInt64, into out: UnsafeMutableRawBufferPointer) {
        for (index, byte) in magic.enumerated() { out[HeaderField.magic + index] = byte }
        HeaderField.version.store(version, into: out)
        HeaderField.layoutSignature.store(CacheIndex.layoutSignature, into: out)
        HeaderField.seed.store(header.seed, into: out)
        HeaderField.journalSalt.store(header.journalSalt, into: out)
        HeaderField.journalLength.store(header.journalLength, into: out)
        HeaderField.journalRecords.store(UInt64(header.journalRecords), into: out)
        HeaderField.entryCount.store(UInt64(header.entryCount), into: out)
        HeaderField.blobCount.store(UInt64(header.blobCount), into: out)
        HeaderField.keyBytes.store(UInt64(header.keyBytes), into: out)
        HeaderField.oldest.store(header.oldest, into: out)
        HeaderField.newest.store(header.newest, into: out)
        HeaderField.bodyDigest.store(bodyDigest, into: out)
        HeaderField.earliestExpiry.store(header.earliestExpiry, into: out)
        HeaderField.storedBytes.store(UInt64(header.storedBytes), into: out)
        HeaderField.lastSegment.store(header.lastSegment, into: out)
        HeaderField.flags.store(header.segmented ? 1 : 0, into: out)
        HeaderField.lastSegmentEnd.store(header.lastSegmentEnd, into: out)
        HeaderField.crc.store(CRC32.checksum(UnsafeRawBufferPointer(rebasing: out[0..<HeaderField.crc.offset])), into: out)
    }

    // MARK: Reading

    /// Maps the snapshot at `path` once its header page, read first, is intact, gives the
    /// file's real size and reflects at most `journalSize` bytes of journal (which bounds every
    /// count in it): a file that claims more (a sparse one) is never mapped and prefaulted.
    /// `nil` when there is no snapshot; `.failure` says why it cannot be used (`.sizeMismatch`:
    /// it reflects more journal than there is).
    /// With `cipher`, the file is a sealed image (`seal(_:cipher:)`): read, opened and
    /// copied into anonymous memory, then used the same way.
    /// `prefault`: whether the pages are read in at once, given the header (else as used).
    static func map(_ path: CachePath, io: FileIO, journalSize: Int64, cipher: CacheCipher?,
                    prefault: (Header) -> Bool = { _ in true }) throws -> Result<(file: MappedFile, header: Header), BlobDamage>? {
        if let cipher { return try mapSealed(path, io: io, journalSize: journalSize, cipher: cipher) }
        guard let fd = try io.openIfExists(path) else { return nil }
        defer { io.close(fd) }
        let size = Int(try io.fileSize(fd, path: path))
        let first = try io.read(fd, count: min(size, page), at: 0, path: path)
        switch first.withUnsafeBytes({ parseHeader($0, fileSize: size) }) {
        case .failure(let damage): return .failure(damage)
        case .success(let header):
            guard header.journalLength <= journalSize else {
                return .failure(.sizeMismatch("reflects \(header.journalLength) bytes of journal, which has \(journalSize)"))
            }
            guard let file = try MappedFile(fd, count: size, path: path, io: io, forReadingOnly: false, prefault: prefault(header)) else {
                return .failure(.truncated("snapshot is empty"))
            }
            return .success((file, header))
        }
    }

    /// Deletes the snapshot at `path` if its first page is still `firstPage` (the file this
    /// open wrote or mapped, not one another open put there since). Best effort.
    static func remove(_ path: CachePath, io: FileIO, ifItBegins firstPage: some Collection<UInt8>) {
        guard let fd = try? io.openIfExists(path) else { return }
        let current = try? io.read(fd, count: page, at: 0, path: path)
        io.close(fd)
        guard let current, current.elementsEqual(firstPage) else { return }
        _ = try? io.remove(path)
    }

    /// The header of a snapshot image (its first page at least), or why it cannot be used;
    /// `fileSize` is the whole file's (by default, the image's).
    static func parseHeader(_ image: UnsafeRawBufferPointer, fileSize: Int? = nil) -> Result<Header, BlobDamage> {
        guard image.count >= page else { return .failure(.truncated("snapshot shorter than its header")) }
        guard image[HeaderField.magic..<HeaderField.magic + magic.count].elementsEqual(magic) else {
            return .failure(.header("bad magic"))
        }
        let version = HeaderField.version.load(from: image)
        guard version == Self.version else { return .failure(.header("format version \(version)")) }
        guard CRC32.checksum(UnsafeRawBufferPointer(rebasing: image[0..<HeaderField.crc.offset])) == HeaderField.crc.load(from: image) else {
            return .failure(.checksum("snapshot header CRC mismatch"))
        }
        guard HeaderField.layoutSignature.load(from: image) == CacheIndex.layoutSignature else {
            return .failure(.header(otherLayout))
        }
        let journalRecords = HeaderField.journalRecords.load(from: image), entryCount = HeaderField.entryCount.load(from: image)
        let blobCount = HeaderField.blobCount.load(from: image), keyBytes = HeaderField.keyBytes.load(from: image)
        let limit = UInt64(Int32.max)
        guard journalRecords <= limit, entryCount <= limit, blobCount <= limit, keyBytes <= limit else {
            return .failure(.header("impossible counts"))
        }
        // Every record takes at least 10 bytes of the journal it reflects, every entry a record,
        // every blob an entry, every key byte a byte of a record: counts a journal bounds.
        let journalLength = HeaderField.journalLength.load(from: image)
        guard journalLength >= Int64(JournalFormat.headerSize), journalRecords <= UInt64(journalLength) / 10,
              entryCount <= journalRecords, blobCount <= entryCount, keyBytes <= UInt64(journalLength) else {
            return .failure(.header("counts the journal it reflects cannot hold"))
        }
        let storedBytes = Int64(bitPattern: HeaderField.storedBytes.load(from: image))
        let lastSegment = HeaderField.lastSegment.load(from: image), lastSegmentEnd = HeaderField.lastSegmentEnd.load(from: image)
        guard storedBytes >= 0, storedBytes <= Int64(CacheIndex.maxTotalBytes), lastSegmentEnd >= 0,
              lastSegmentEnd <= Int64(Int32.max) * 16 + Int64(BlobInfo.maxLength),
              lastSegment == CacheIndex.Blob.loose || PackFormat.isValidSegmentNumber(lastSegment) else {
            return .failure(.header("impossible totals"))
        }
        let header = Header(
            seed: HeaderField.seed.load(from: image), journalSalt: HeaderField.journalSalt.load(from: image),
            journalLength: journalLength, journalRecords: Int(journalRecords), entryCount: Int(entryCount),
            blobCount: Int(blobCount), keyBytes: Int(keyBytes),
            oldest: HeaderField.oldest.load(from: image), newest: HeaderField.newest.load(from: image),
            bodyDigest: HeaderField.bodyDigest.load(from: image), earliestExpiry: HeaderField.earliestExpiry.load(from: image),
            storedBytes: Int(storedBytes), lastSegment: lastSegment, lastSegmentEnd: lastSegmentEnd,
            segmented: HeaderField.flags.load(from: image) & 1 != 0)
        let fileSize = fileSize ?? image.count
        guard fileSize == header.fileSize else {
            return .failure(.truncated("snapshot has \(fileSize) bytes, its header says \(header.fileSize)"))
        }
        return .success(header)
    }

    /// The index held by a mapped snapshot whose header parsed as `header`, used where it lies.
    /// Three pieces of work share the cores: the records checked and their totals summed (the
    /// longest), the body's chunks hashed (XXH64), and the two tables checked; `nil` when a
    /// digest differs, the parts do not make a consistent index, or it does not have the totals
    /// the header gave (which an open may have acted on before restoring).
    static func restore(_ file: MappedFile, header: Header) -> CacheIndex? {
        var intact = false
        var index: CacheIndex?
        var tables: (keys: SlotTable, blobs: SlotTable)?
        // The longest first: with two cores, whichever of the others ends first takes the third.
        Parallel.run([
            {
                index = CacheIndex(seed: header.seed, restoring: CacheIndex.Parts(
                    entries: FlatArray(mapping: file, offset: header.entriesOffset, count: header.entryCount),
                    blobs: FlatArray(mapping: file, offset: header.blobsOffset, count: header.blobCount),
                    keyArena: FlatArray(mapping: file, offset: header.keysOffset, count: header.keyBytes),
                    oldest: header.oldest, newest: header.newest, segmented: header.segmented))
            },
            { intact = bodyIsIntact(file.bytes, header: header) },
            {
                guard let keys = SlotTable(buckets: FlatArray(mapping: file, offset: header.keyTableOffset, count: header.keyBuckets),
                                           slotCount: header.entryCount),
                      let blobs = SlotTable(buckets: FlatArray(mapping: file, offset: header.blobTableOffset, count: header.blobBuckets),
                                            slotCount: header.blobCount) else { return }
                tables = (keys, blobs)
            },
        ])
        guard intact, var index, let tables, index.adopt(keyTable: tables.keys, blobTable: tables.blobs),
              index.storedBytes == header.storedBytes, index.earliestExpiry >= header.earliestExpiry,
              lastSegment(of: index) == (header.lastSegment, header.lastSegmentEnd) else {
            return nil
        }
        return index
    }
}
