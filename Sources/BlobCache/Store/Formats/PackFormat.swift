/// Pack segments and their records (docs/FORMAT.md).
enum PackFormat {
    static let segmentMagic: UInt32 = 0x4B50_4342 // "BCPK"
    static let recordMagic: UInt32 = 0x5250_4342  // "BCPR"
    static let version: UInt8 = 1
    static let segmentHeaderSize = 16
    static let recordHeaderSize = 40

    /// The file name of segment `number`: six decimal digits and `.pack`.
    static func fileName(of number: UInt32) -> String {
        let digits = String(number)
        return String(repeating: "0", count: max(0, 6 - digits.count)) + digits + ".pack"
    }

    /// The segment number in a file name, or `nil` when the name is not a segment's.
    static func segmentNumber(fromFileName name: String) -> UInt32? {
        guard name.hasSuffix(".pack") else { return nil }
        let stem = name.dropLast(5)
        guard stem.count >= 6, stem.count <= 8, stem.allSatisfy({ $0.isASCII && $0.isNumber }), let number = UInt32(stem),
              isValidSegmentNumber(number), fileName(of: number) == name else { return nil }
        return number
    }

    /// Segment numbers run from 1 to 2^24 (the index keeps a counter per number, so a damaged
    /// or planted number must not make it allocate gigabytes).
    static let maxSegmentNumber: UInt32 = 1 << 24

    /// The largest segment size limit a configuration may set (records must start below the
    /// 32 GiB a journal record's offset may name).
    static let maxSegmentLimit = 16 << 30

    /// The largest file a store takes for a segment: one whose last record starts at the
    /// highest offset a journal record may name (a pack record holds under 4 GiB). Anything
    /// larger is not a segment any release wrote. 2^24 of them sum to under 2^60.
    static let maxSegmentSize = Int64(Int32.max) * 16 + (4 << 30) + 64

    static func isValidSegmentNumber(_ number: UInt32) -> Bool { number >= 1 && number <= maxSegmentNumber }

    static func segmentHeader(number: UInt32) -> [UInt8] {
        var writer = BinaryWriter(capacity: segmentHeaderSize)
        writer.append(segmentMagic)
        writer.append(version)
        writer.append(bytes: [0, 0, 0])
        writer.append(number)
        writer.append(CRC32.checksum(writer.bytes))
        return writer.bytes
    }

    /// Checks a segment header; `nil` when good, else what is wrong.
    static func checkSegmentHeader(_ bytes: UnsafeRawBufferPointer, number: UInt32) -> String? {
        guard bytes.count >= segmentHeaderSize else { return "segment shorter than its header" }
        var reader = BinaryReader(bytes)
        guard reader.readUInt32() == segmentMagic else { return "bad segment magic" }
        let version = reader.readUInt8()!
        guard version == self.version else { return "unknown segment version \(version)" }
        _ = reader.readBytes(3)
        guard reader.readUInt32() == number else { return "segment number does not match its name" }
        let crc = reader.readUInt32()!
        guard CRC32.checksum(UnsafeRawBufferPointer(rebasing: bytes[0..<12])) == crc else { return "segment header CRC mismatch" }
        return nil
    }

    /// How a record is checked: byte 21 of its header (docs/FORMAT.md).
    enum RecordChecksum: UInt8, Sendable {
        /// zlib's CRC-32 of header bytes 0..<36 and the payload (earlier releases).
        case crc32 = 0
        /// The low 32 bits of the payload's XXH64, seeded with the XXH64 of header bytes 0..<36.
        case xxh64 = 1

        /// The checksum of a record whose first 36 header bytes are `head`.
        func value(head: UnsafeRawBufferPointer, payload: UnsafeRawBufferPointer) -> UInt32 {
            switch self {
            case .crc32: CRC32.update(CRC32.checksum(head), payload)
            case .xxh64: UInt32(truncatingIfNeeded: XXHash64.hash(payload, after: head))
            }
        }
    }

    /// Header bytes the checksum covers (all but the checksum field itself).
    private static let checkedHeaderSize = 36

    /// Fills the record header in `buffer[0..<40]` for the payload that follows it.
    /// `sealed`: the payload is AES-GCM sealed (flag bit 0 of byte 22).
    static func writeRecordHeader(into buffer: inout [UInt8], id: BlobID, codec: CodecTag, rawLength: Int, sealed: Bool) {
        let payloadLength = buffer.count - recordHeaderSize
        var header = BinaryWriter(capacity: recordHeaderSize)
        header.append(recordMagic)
        header.append(digestOf: id)
        header.append(codec.rawValue)
        header.append(RecordChecksum.xxh64.rawValue)
        header.append(bytes: [sealed ? LooseBlobFormat.sealedFlag : 0, 0])
        header.append(UInt64(rawLength))
        header.append(UInt32(payloadLength))
        buffer.replaceSubrange(0..<checkedHeaderSize, with: header.bytes)
        let checksum = buffer.withUnsafeBytes { all in
            RecordChecksum.xxh64.value(head: UnsafeRawBufferPointer(rebasing: all[0..<checkedHeaderSize]),
                                       payload: UnsafeRawBufferPointer(rebasing: all[recordHeaderSize...]))
        }
        withUnsafeBytes(of: checksum.littleEndian) { buffer.replaceSubrange(checkedHeaderSize..<recordHeaderSize, with: $0) }
    }

    /// A record header as read back.
    struct RecordHeader {
        let id: BlobID
        let codec: CodecTag
        let rawLength: Int
        let payloadLength: Int
        let checksumKind: RecordChecksum
        let checksum: UInt32
        /// The payload is AES-GCM sealed.
        let sealed: Bool
    }

    static func parseRecordHeader(_ bytes: UnsafeRawBufferPointer) -> Result<RecordHeader, BlobDamage> {
        guard bytes.count >= recordHeaderSize else { return .failure(.truncated("record header cut short")) }
        var reader = BinaryReader(bytes)
        guard reader.readUInt32() == recordMagic else { return .failure(.header("bad record magic")) }
        let id = reader.readBlobID()!
        guard let codec = CodecTag(rawValue: reader.readUInt8()!) else { return .failure(.header("unknown codec")) }
        guard let kind = RecordChecksum(rawValue: reader.readUInt8()!) else { return .failure(.header("unknown checksum kind")) }
        let flags = reader.readUInt8()!
        _ = reader.readUInt8()
        guard flags & ~LooseBlobFormat.sealedFlag == 0 else { return .failure(.header("unknown flags \(flags)")) }
        let raw = reader.readUInt64()!
        let stored = reader.readUInt32()!
        let checksum = reader.readUInt32()!
        guard raw <= UInt64(BlobInfo.maxLength) else { return .failure(.header("impossible length")) }
        return .success(RecordHeader(id: id, codec: codec, rawLength: Int(raw), payloadLength: Int(stored),
                                     checksumKind: kind, checksum: checksum,
                                     sealed: flags & LooseBlobFormat.sealedFlag != 0))
    }

    /// Checks one record (header + payload, as read at its offset) as `check` says and decodes
    /// it, opening its seal under `cipher`.
    static func decode(record bytes: UnsafeRawBufferPointer, expecting info: BlobInfo?,
                       cipher: CacheCipher?, checking check: PayloadCheck = .everything) -> Result<[UInt8], BlobDamage> {
        let header: RecordHeader
        switch parseRecordHeader(bytes) {
        case .failure(let damage): return .failure(damage)
        case .success(let parsed): header = parsed
        }
        guard bytes.count >= recordHeaderSize + header.payloadLength else {
            return .failure(.truncated("record needs \(recordHeaderSize + header.payloadLength) bytes, \(bytes.count) remain"))
        }
        if let info {
            guard header.id == info.id else { return .failure(.header("record holds blob \(header.id)")) }
            guard info.rawLength == header.rawLength, info.payloadLength == header.payloadLength, info.codec == header.codec else {
                return .failure(.sizeMismatch("record says \(header.rawLength)/\(header.payloadLength) bytes, index says \(info.rawLength)/\(info.payloadLength)"))
            }
        }
        let payload = UnsafeRawBufferPointer(rebasing: bytes[recordHeaderSize..<recordHeaderSize + header.payloadLength])
        let head = UnsafeRawBufferPointer(rebasing: bytes[0..<checkedHeaderSize])
        guard check.tagSuffices(sealed: header.sealed, cipher: cipher)
                || header.checksumKind.value(head: head, payload: payload) == header.checksum else {
            return .failure(.checksum(header.checksumKind == .crc32 ? "CRC mismatch" : "XXH64 mismatch"))
        }
        return SealedPayload.decode(.borrowed(payload), sealed: header.sealed, cipher: cipher, id: header.id, codec: header.codec,
                                    rawLength: header.rawLength)
    }
}
