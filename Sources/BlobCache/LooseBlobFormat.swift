/// The loose blob file: a 32-byte header, then the payload (docs/FORMAT.md).
enum LooseBlobFormat {
    static let magic: UInt32 = 0x4C42_4342 // "BCBL" read as a little-endian word
    static let version: UInt8 = 1
    static let headerSize = 32

    /// Fills the header in `buffer[offset..<offset+32]` for the payload that follows it.
    static func writeHeader(into buffer: inout [UInt8], at offset: Int, codec: CodecTag, rawLength: Int) {
        let payloadLength = buffer.count - offset - headerSize
        var header = BinaryWriter(capacity: headerSize)
        header.append(magic)
        header.append(version)
        header.append(codec.rawValue)
        header.append(UInt16(0))
        header.append(UInt64(rawLength))
        header.append(UInt64(payloadLength))
        header.append(UInt32(0))
        buffer.replaceSubrange(offset..<offset + 28, with: header.bytes)
        let crc = buffer.withUnsafeBytes { all in
            CRC32.update(CRC32.checksum(UnsafeRawBufferPointer(rebasing: all[offset..<offset + 28])),
                         UnsafeRawBufferPointer(rebasing: all[(offset + headerSize)...]))
        }
        withUnsafeBytes(of: crc.littleEndian) { buffer.replaceSubrange(offset + 28..<offset + 32, with: $0) }
    }

    /// What a header says, before the payload is checked.
    struct Header {
        let codec: CodecTag
        let rawLength: Int
        let payloadLength: Int
        let crc: UInt32
    }

    /// Parses and sanity-checks a header; the failure says what is wrong.
    static func parseHeader(_ bytes: UnsafeRawBufferPointer) -> Result<Header, BlobDamage> {
        var reader = BinaryReader(bytes)
        guard bytes.count >= headerSize else { return .failure(.truncated("file of \(bytes.count) bytes has no complete header")) }
        guard reader.readUInt32() == magic else { return .failure(.header("bad magic")) }
        let version = reader.readUInt8()!
        guard version == self.version else { return .failure(.header("unknown format version \(version)")) }
        guard let codec = CodecTag(rawValue: reader.readUInt8()!) else { return .failure(.header("unknown codec")) }
        _ = reader.readUInt16()
        let raw = reader.readUInt64()!, stored = reader.readUInt64()!
        _ = reader.readUInt32()
        let crc = reader.readUInt32()!
        guard raw <= UInt64(Int.max), stored <= UInt64(Int.max) else { return .failure(.header("impossible length")) }
        return .success(Header(codec: codec, rawLength: Int(raw), payloadLength: Int(stored), crc: crc))
    }

    /// Checks a whole loose blob file and decodes it; `.failure` names the damage.
    static func decode(file bytes: UnsafeRawBufferPointer, expecting info: BlobInfo?) -> Result<[UInt8], BlobDamage> {
        let header: Header
        switch parseHeader(bytes) {
        case .failure(let damage): return .failure(damage)
        case .success(let parsed): header = parsed
        }
        guard bytes.count == headerSize + header.payloadLength else {
            return .failure(.truncated("file is \(bytes.count) bytes, header says \(headerSize + header.payloadLength)"))
        }
        // Only the value's length must agree with the index: the encoding is the file's own
        // (recompression swaps it atomically by rename before the journal hears of it).
        if let info, info.rawLength != header.rawLength {
            return .failure(.sizeMismatch("header says \(header.rawLength) bytes of value, index says \(info.rawLength)"))
        }
        let payload = UnsafeRawBufferPointer(rebasing: bytes[headerSize...])
        let head = UnsafeRawBufferPointer(rebasing: bytes[0..<28])
        // A large blob is checksummed (in two halves, combined) while it is decoded, on every
        // core; the bytes are returned only if both pass (decoding damaged input is memory-safe,
        // its result is dropped). An LZ4 frame is split by blocks, each core checksumming and
        // decoding its half in one pass; other codecs decode alongside the two checksums; a raw
        // blob only has its checksum split.
        var crc: UInt32 = 0
        var value: [UInt8]?
        if let decoded = Compression.decodeChecksumming(payload, tag: header.codec, rawCount: header.rawLength, after: head) {
            (value, crc) = decoded
        } else if payload.count >= Parallel.threshold {
            let half = payload.count / 2
            var first: UInt32 = 0, second: UInt32 = 0
            let checksums: [() -> Void] = [
                { first = CRC32.update(CRC32.checksum(head), UnsafeRawBufferPointer(rebasing: payload[..<half])) },
                { second = CRC32.checksum(UnsafeRawBufferPointer(rebasing: payload[half...])) },
            ]
            if header.codec == .none {
                Parallel.run(checksums)
            } else {
                value = Compression.decode(payload, tag: header.codec, rawCount: header.rawLength, alongside: checksums)
            }
            crc = CRC32.combine(first, second, secondLength: payload.count - half)
        } else {
            crc = CRC32.update(CRC32.checksum(head), payload)
        }
        guard crc == header.crc else { return .failure(.checksum("CRC mismatch")) }
        guard let value = value ?? Compression.decode(payload, tag: header.codec, rawCount: header.rawLength) else {
            return .failure(.decompression("\(header.codec.name) payload does not decode to \(header.rawLength) bytes"))
        }
        return .success(value)
    }
}

/// What is wrong with a stored blob, as fsck names it.
enum BlobDamage: Error, Equatable, Sendable {
    case truncated(String)
    case header(String)
    case sizeMismatch(String)
    case checksum(String)
    case decompression(String)
    case digest(String)
    case missing(String)

    var detail: String {
        switch self {
        case .truncated(let s), .header(let s), .sizeMismatch(let s), .checksum(let s),
             .decompression(let s), .digest(let s), .missing(let s): s
        }
    }

    /// A stable name for reports.
    var kind: String {
        switch self {
        case .truncated: "truncated"
        case .header: "bad-header"
        case .sizeMismatch: "size-mismatch"
        case .checksum: "checksum"
        case .decompression: "decompression"
        case .digest: "digest"
        case .missing: "missing"
        }
    }
}
