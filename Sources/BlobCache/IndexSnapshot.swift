/// The index snapshot file (`DIR/index`, docs/FORMAT.md): the index as replay left it after a
/// given length of journal, so that open restores it and replays only the journal after that.
/// Derived data: whatever is wrong with it, open falls back to replaying the whole journal.
enum IndexSnapshot {
    static let magic: [UInt8] = Array("BCIX".utf8)
    static let version: UInt32 = 1
    static let headerSize = 72
    static let blobRecordSize = 48
    static let entryRecordSize = 48
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
        let bodyCRC: UInt32

        var keyBuckets: Int { SlotTable.size(forCapacity: entryCount) }
        var blobBuckets: Int { SlotTable.size(forCapacity: blobCount) }
        var keysStart: Int { blobCount * blobRecordSize + entryCount * entryRecordSize }
        var tablesStart: Int { keysStart + keyBytes }
        var bodySize: Int { tablesStart + 4 * (keyBuckets + blobBuckets) }
    }

    // MARK: Writing

    /// The snapshot file's bytes for `index`, which reflects the first `journalLength` bytes
    /// (`journalRecords` records) of the journal whose salt is `journalSalt`.
    static func encode(_ index: CacheIndex, journalSalt: UInt64, journalLength: Int64, journalRecords: Int) -> [UInt8] {
        let order = index.journalOrder()
        // Blob slots in the index → record numbers in the file, in first-use order.
        var blobNumber = [Int32](repeating: -1, count: index.blobs.count)
        var blobSlots: [Int32] = []
        blobSlots.reserveCapacity(index.blobCount)
        var keyBytes = 0
        for slot in order {
            let entry = index.entry(at: slot)
            keyBytes += Int(entry.keyLength)
            if blobNumber[Int(entry.blob)] < 0 {
                blobNumber[Int(entry.blob)] = Int32(blobSlots.count)
                blobSlots.append(entry.blob)
            }
        }
        // The tables as they will be restored: slot numbers are record numbers in the file.
        var keyTable = SlotTable(capacity: order.count), blobTable = SlotTable(capacity: blobSlots.count)
        for (number, slot) in order.enumerated() {
            keyTable.insert(Int32(number), hash: UInt64(index.entry(at: slot).keyHash)) { _ in preconditionFailure("sized") }
        }
        for (number, slot) in blobSlots.enumerated() {
            blobTable.insert(Int32(number), hash: KeyHash.hash(index.blob(at: slot).id, seed: index.seed)) { _ in
                preconditionFailure("sized")
            }
        }
        let body = blobSlots.count * blobRecordSize + order.count * entryRecordSize + keyBytes
            + 4 * (keyTable.savedBuckets.count + blobTable.savedBuckets.count)
        var file = [UInt8](repeating: 0, count: headerSize + body)
        file.withUnsafeMutableBytes { out in
            var cursor = headerSize
            for slot in blobSlots {
                let blob = index.blob(at: slot)
                out.storeBytes(of: blob.id.high.bigEndian, toByteOffset: cursor, as: UInt64.self)
                out.storeBytes(of: blob.id.low.bigEndian, toByteOffset: cursor + 8, as: UInt64.self)
                out.storeBytes(of: UInt64(blob.rawLength).littleEndian, toByteOffset: cursor + 16, as: UInt64.self)
                out.storeBytes(of: UInt64(blob.payloadLength).littleEndian, toByteOffset: cursor + 24, as: UInt64.self)
                out.storeBytes(of: blob.offset.littleEndian, toByteOffset: cursor + 32, as: UInt64.self)
                out.storeBytes(of: blob.segment.littleEndian, toByteOffset: cursor + 40, as: UInt32.self)
                out[cursor + 44] = blob.codec.rawValue
                cursor += blobRecordSize
            }
            for slot in order {
                let entry = index.entry(at: slot)
                out.storeBytes(of: UInt32(blobNumber[Int(entry.blob)]).littleEndian, toByteOffset: cursor, as: UInt32.self)
                out.storeBytes(of: entry.keyLength.littleEndian, toByteOffset: cursor + 4, as: UInt32.self)
                out.storeBytes(of: entry.keyHash.littleEndian, toByteOffset: cursor + 8, as: UInt32.self)
                out.storeBytes(of: UInt32(entry.pinned ? 1 : 0).littleEndian, toByteOffset: cursor + 12, as: UInt32.self)
                out.storeBytes(of: entry.created.littleEndian, toByteOffset: cursor + 16, as: Int64.self)
                out.storeBytes(of: entry.expiry.littleEndian, toByteOffset: cursor + 24, as: Int64.self)
                out.storeBytes(of: entry.access.littleEndian, toByteOffset: cursor + 32, as: Int64.self)
                out.storeBytes(of: entry.journaledAccess.littleEndian, toByteOffset: cursor + 40, as: Int64.self)
                cursor += entryRecordSize
            }
            for slot in order {
                index.withKeyBytes(at: slot) { key in
                    if !key.isEmpty { (out.baseAddress! + cursor).copyMemory(from: key.baseAddress!, byteCount: key.count) }
                    cursor += key.count
                }
            }
            for bucket in keyTable.savedBuckets + blobTable.savedBuckets {
                out.storeBytes(of: bucket.littleEndian, toByteOffset: cursor, as: Int32.self)
                cursor += 4
            }
            let header = Header(seed: index.seed, journalSalt: journalSalt, journalLength: journalLength,
                                journalRecords: journalRecords, entryCount: order.count, blobCount: blobSlots.count, keyBytes: keyBytes,
                                bodyCRC: CRC32.checksum(UnsafeRawBufferPointer(rebasing: out[headerSize...])))
            encodeHeader(header, into: out)
        }
        return file
    }

    private static func encodeHeader(_ header: Header, into out: UnsafeMutableRawBufferPointer) {
        for (index, byte) in magic.enumerated() { out[index] = byte }
        out.storeBytes(of: version.littleEndian, toByteOffset: 4, as: UInt32.self)
        out.storeBytes(of: header.seed.littleEndian, toByteOffset: 8, as: UInt64.self)
        out.storeBytes(of: header.journalSalt.littleEndian, toByteOffset: 16, as: UInt64.self)
        out.storeBytes(of: header.journalLength.littleEndian, toByteOffset: 24, as: Int64.self)
        out.storeBytes(of: UInt64(header.journalRecords).littleEndian, toByteOffset: 32, as: UInt64.self)
        out.storeBytes(of: UInt64(header.entryCount).littleEndian, toByteOffset: 40, as: UInt64.self)
        out.storeBytes(of: UInt64(header.blobCount).littleEndian, toByteOffset: 48, as: UInt64.self)
        out.storeBytes(of: UInt64(header.keyBytes).littleEndian, toByteOffset: 56, as: UInt64.self)
        out.storeBytes(of: header.bodyCRC.littleEndian, toByteOffset: 64, as: UInt32.self)
        let crc = CRC32.checksum(UnsafeRawBufferPointer(rebasing: out[0..<68]))
        out.storeBytes(of: crc.littleEndian, toByteOffset: 68, as: UInt32.self)
    }

    // MARK: Reading

    /// The header of a snapshot image, or why it cannot be used.
    static func parseHeader(_ image: UnsafeRawBufferPointer) -> Result<Header, BlobDamage> {
        guard image.count >= headerSize else { return .failure(.truncated("snapshot shorter than its header")) }
        guard image[0..<4].elementsEqual(magic) else { return .failure(.header("bad magic")) }
        let version = UInt32(littleEndian: image.loadUnaligned(fromByteOffset: 4, as: UInt32.self))
        guard version == Self.version else { return .failure(.header("format version \(version)")) }
        let crc = UInt32(littleEndian: image.loadUnaligned(fromByteOffset: 68, as: UInt32.self))
        guard CRC32.checksum(UnsafeRawBufferPointer(rebasing: image[0..<68])) == crc else {
            return .failure(.checksum("snapshot header CRC mismatch"))
        }
        func word(_ offset: Int) -> UInt64 { UInt64(littleEndian: image.loadUnaligned(fromByteOffset: offset, as: UInt64.self)) }
        let counts = [word(32), word(40), word(48), word(56)]
        guard counts.allSatisfy({ $0 <= UInt64(Int32.max) }) else { return .failure(.header("impossible counts")) }
        let header = Header(seed: word(8), journalSalt: word(16), journalLength: Int64(bitPattern: word(24)),
                            journalRecords: Int(counts[0]), entryCount: Int(counts[1]), blobCount: Int(counts[2]),
                            keyBytes: Int(counts[3]),
                            bodyCRC: UInt32(littleEndian: image.loadUnaligned(fromByteOffset: 64, as: UInt32.self)))
        guard image.count == headerSize + header.bodySize else {
            return .failure(.truncated("snapshot has \(image.count) bytes, its header says \(headerSize + header.bodySize)"))
        }
        return .success(header)
    }

    /// Restores the index from a snapshot image whose header parsed as `header`. Two halves
    /// of similar cost run at once: the body's CRC and the blob records on one core, the entry
    /// records, keys and tables on the other (most of either is the kernel zeroing fresh
    /// pages). `nil` when the CRC fails or the records do not make a consistent index.
    static func restore(_ image: UnsafeRawBufferPointer, header: Header) -> CacheIndex? {
        let body = UnsafeRawBufferPointer(rebasing: image[headerSize...])
        var crc: UInt32 = 0
        var blobs: [CacheIndex.Blob]?
        var parts: (entries: [CacheIndex.Entry], keys: [UInt8], keyTable: SlotTable, blobTable: SlotTable)?
        Parallel.run([
            { crc = CRC32.checksum(body); blobs = decodeBlobs(body, header: header) },
            { parts = decodeEntries(body, header: header) },
        ])
        // Taken out of the optionals so that each array has one owner (the restoring init
        // changes them in place; a second owner would make it copy them).
        guard crc == header.bodyCRC, let decodedBlobs = blobs.take(), let decoded = parts.take() else { return nil }
        let (entries, keys, keyTable, blobTable) = decoded
        return CacheIndex(seed: header.seed, restoringEntries: consume entries, blobs: consume decodedBlobs,
                          keyArena: consume keys, keyTable: consume keyTable, blobTable: consume blobTable)
    }

    // Decoding may run while the CRC is still being checked: nothing here may trap on bad
    // bytes; it returns `nil` instead.

    private static func decodeBlobs(_ body: UnsafeRawBufferPointer, header: Header) -> [CacheIndex.Blob]? {
        var valid = true
        let blobs = HugePages.array(count: header.blobCount) { (out: UnsafeMutableBufferPointer<CacheIndex.Blob>) in
            for number in 0..<header.blobCount {
                let at = number * blobRecordSize
                func word(_ offset: Int) -> UInt64 { UInt64(littleEndian: body.loadUnaligned(fromByteOffset: at + offset, as: UInt64.self)) }
                let codec = CodecTag(rawValue: body[at + 44])
                if codec == nil { valid = false }
                let segment = UInt32(littleEndian: body.loadUnaligned(fromByteOffset: at + 40, as: UInt32.self))
                let id = BlobID(high: UInt64(bigEndian: body.loadUnaligned(fromByteOffset: at, as: UInt64.self)),
                                low: UInt64(bigEndian: body.loadUnaligned(fromByteOffset: at + 8, as: UInt64.self)))
                (out.baseAddress! + number).initialize(to: CacheIndex.Blob(BlobInfo(
                    id: id, codec: codec ?? .none, rawLength: Int(truncatingIfNeeded: word(16)),
                    payloadLength: Int(truncatingIfNeeded: word(24)),
                    place: segment == CacheIndex.Blob.loose ? .loose : .packed(segment: segment, offset: word(32)))))
            }
        }
        return valid ? blobs : nil
    }

    private static func decodeEntries(_ body: UnsafeRawBufferPointer, header: Header)
        -> (entries: [CacheIndex.Entry], keys: [UInt8], keyTable: SlotTable, blobTable: SlotTable)? {
        var valid = true
        var keyOffset = 0
        let entriesStart = header.blobCount * blobRecordSize
        let entries = HugePages.array(count: header.entryCount) { (out: UnsafeMutableBufferPointer<CacheIndex.Entry>) in
            for number in 0..<header.entryCount {
                let at = entriesStart + number * entryRecordSize
                func half(_ offset: Int) -> UInt32 { UInt32(littleEndian: body.loadUnaligned(fromByteOffset: at + offset, as: UInt32.self)) }
                func time(_ offset: Int) -> Int64 { Int64(littleEndian: body.loadUnaligned(fromByteOffset: at + offset, as: Int64.self)) }
                var keyLength = half(4)
                if keyLength > CacheIndex.Entry.maxKeyLength || keyOffset > Int(UInt32.max) {
                    valid = false
                    keyLength = 0
                }
                (out.baseAddress! + number).initialize(to: CacheIndex.Entry(
                    created: time(16), expiry: time(24), access: time(32), journaledAccess: time(40),
                    keyOffset: UInt32(truncatingIfNeeded: keyOffset), keyLength: keyLength, keyHash: half(8),
                    blob: Int32(bitPattern: half(0)), pinned: half(12) & 1 != 0, orderJournaled: true))
                keyOffset += Int(keyLength)
            }
        }
        let keys = UnsafeRawBufferPointer(rebasing: body[header.keysStart..<header.tablesStart])
        guard valid, keyOffset == keys.count else { return nil }
        let arena = HugePages.array(count: keys.count) { (out: UnsafeMutableBufferPointer<UInt8>) in
            _ = out.initialize(from: keys)
        }
        guard let keyTable = SlotTable(buckets: buckets(body, at: header.tablesStart, count: header.keyBuckets),
                                       slotCount: header.entryCount),
              let blobTable = SlotTable(buckets: buckets(body, at: header.tablesStart + 4 * header.keyBuckets,
                                                         count: header.blobBuckets),
                                        slotCount: header.blobCount) else { return nil }
        return (entries, arena, keyTable, blobTable)
    }

    private static func buckets(_ body: UnsafeRawBufferPointer, at start: Int, count: Int) -> [Int32] {
        HugePages.array(count: count) { (out: UnsafeMutableBufferPointer<Int32>) in
            for number in 0..<count {
                out[number] = Int32(littleEndian: body.loadUnaligned(fromByteOffset: start + 4 * number, as: Int32.self))
            }
        }
    }
}
