/// Finds keys in a mapped index snapshot before it is restored, so that an open need not read
/// the whole file before its first get (`CacheState.PendingRestore`).
///
/// Every 16 KiB chunk of the body is checked against its digest the first time a lookup reads
/// from it, and every number read (bucket, record number, key range, blob record) is bounded
/// before it is used: a damaged file gives `.unusable`, never a wrong entry or a crash. The
/// digests themselves are checked once, against the header's hash of them, when it is made.
///
///     var lookup = SnapshotLookup(file: file, header: header)
///     if case .found(let entry) = lookup?.find(keyBytes) { … }
struct SnapshotLookup {
    /// What the snapshot holds for a key.
    enum Outcome: Equatable {
        case found(Found)
        /// The key has no entry.
        case absent
        /// A piece the lookup needed failed its digest or a bound: restore (and check) it whole.
        case unusable
    }

    /// A key's entry as the snapshot has it.
    struct Found: Equatable {
        let blob: BlobInfo
        let expiry: Int64
    }

    let file: MappedFile
    let header: IndexSnapshot.Header
    /// One bit per chunk whose digest matched.
    private var checked: [UInt64]

    /// `nil` when the chunk digests do not match their hash in the header.
    init?(file: MappedFile, header: IndexSnapshot.Header) {
        guard header.fileSize == file.count,
              XXHash64.hash(UnsafeRawBufferPointer(rebasing: file.bytes[header.digestsOffset...])) == header.bodyDigest
        else { return nil }
        self.file = file
        self.header = header
        checked = [UInt64](repeating: 0, count: (header.chunkCount + 63) / 64)
    }

    /// The entry of the key whose UTF-8 is `key`.
    mutating func find(_ key: UnsafeRawBufferPointer) -> Outcome {
        let bytes = file.bytes
        let hash = UInt32(truncatingIfNeeded: KeyHash.hash(key, seed: header.seed))
        let bucketSize = MemoryLayout<SlotTable.Bucket>.stride, entrySize = MemoryLayout<CacheIndex.Entry>.stride
        let mask = header.keyBuckets - 1
        var bucketNumber = Int(hash) & mask
        // At most one pass over the table: a damaged one may have no empty bucket.
        for _ in 0..<header.keyBuckets {
            let bucketOffset = header.keyTableOffset + bucketNumber * bucketSize
            guard isIntact(bucketOffset, count: bucketSize) else { return .unusable }
            let bucket = bytes.loadUnaligned(fromByteOffset: bucketOffset, as: SlotTable.Bucket.self)
            if bucket.slot == SlotTable.Bucket.empty.slot { return .absent }
            guard bucket.slot >= 0, Int(bucket.slot) < header.entryCount else { return .unusable }
            if bucket.hash == hash {
                let entryOffset = header.entriesOffset + Int(bucket.slot) * entrySize
                guard isIntact(entryOffset, count: entrySize) else { return .unusable }
                let entry = bytes.loadUnaligned(fromByteOffset: entryOffset, as: CacheIndex.Entry.self)
                let keyStart = Int(entry.keyOffset), keyLength = Int(entry.keyLength)
                guard entry.blob >= 0, Int(entry.blob) < header.blobCount, keyStart + keyLength <= header.keyBytes,
                      isIntact(header.keysOffset + keyStart, count: keyLength) else { return .unusable }
                if keyLength == key.count,
                   UnsafeRawBufferPointer(rebasing: bytes[(header.keysOffset + keyStart)...].prefix(keyLength)).elementsEqual(key) {
                    let blobOffset = header.blobsOffset + Int(entry.blob) * MemoryLayout<CacheIndex.Blob>.stride
                    guard isIntact(blobOffset, count: MemoryLayout<CacheIndex.Blob>.stride),
                          let blob = CacheIndex.plausibleBlob(at: blobOffset, in: bytes) else { return .unusable }
                    return .found(Found(blob: blob.info, expiry: entry.expiry))
                }
            }
            bucketNumber = (bucketNumber + 1) & mask
        }
        return .unusable
    }

    /// Whether the chunks holding `count` bytes of the body at file offset `offset` match
    /// their digests (each hashed once, then remembered).
    private mutating func isIntact(_ offset: Int, count: Int) -> Bool {
        guard count > 0 else { return true }
        let bytes = file.bytes, page = IndexSnapshot.page, size = IndexSnapshot.chunkSize
        guard offset >= page, offset + count <= header.digestsOffset else { return false }
        for chunk in (offset - page) / size...(offset + count - 1 - page) / size {
            let word = chunk / 64, bit = UInt64(1) << UInt64(chunk % 64)
            if checked[word] & bit != 0 { continue }
            let stored = UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: header.digestsOffset + 8 * chunk, as: UInt64.self))
            guard IndexSnapshot.chunkDigest(bytes, chunk: chunk, header: header) == stored else { return false }
            checked[word] |= bit
        }
        return true
    }
}
