/// The journal's header and record framing (docs/FORMAT.md, "Journal").
enum JournalFormat {
    static let magic: UInt32 = 0x4C4A_4342 // "BCJL"
    static let version: UInt16 = 1
    static let md5Algorithm: UInt8 = 1
    static let headerSize = 32
    /// length (4) + CRC (4) + type (1)
    static let frameSize = 9
    static let maxPayload = 16 << 20

    struct Header: Equatable {
        let salt: UInt64
        let created: Int64
    }

    static func encodeHeader(_ header: Header) -> [UInt8] {
        var writer = BinaryWriter(capacity: headerSize)
        writer.append(magic)
        writer.append(version)
        writer.append(md5Algorithm)
        writer.append(UInt8(0))
        writer.append(header.salt)
        writer.append(header.created)
        writer.append(UInt32(0))
        writer.append(CRC32.checksum(writer.bytes))
        return writer.bytes
    }

    enum HeaderProblem: Error, Equatable {
        /// Missing, short, bad magic or bad CRC: the journal cannot be trusted at all.
        case damaged(String)
        /// Written by a newer BlobCache.
        case newerVersion(Int)
    }

    static func decodeHeader(_ bytes: UnsafeRawBufferPointer) -> Result<Header, HeaderProblem> {
        guard bytes.count >= headerSize else { return .failure(.damaged("journal shorter than its header (\(bytes.count) bytes)")) }
        var reader = BinaryReader(bytes)
        guard reader.readUInt32() == magic else { return .failure(.damaged("bad journal magic")) }
        let version = reader.readUInt16()!
        let algorithm = reader.readUInt8()!
        _ = reader.readUInt8()
        let salt = reader.readUInt64()!
        let created = reader.readInt64()!
        _ = reader.readUInt32()
        let crc = reader.readUInt32()!
        guard CRC32.checksum(UnsafeRawBufferPointer(rebasing: bytes[0..<28])) == crc else {
            return .failure(.damaged("journal header CRC mismatch"))
        }
        guard version <= self.version else { return .failure(.newerVersion(Int(version))) }
        guard algorithm == md5Algorithm else { return .failure(.damaged("unknown hash algorithm \(algorithm)")) }
        return .success(Header(salt: salt, created: created))
    }

    /// The CRC state after the salt, from which each record's CRC continues.
    static func seed(salt: UInt64) -> UInt32 {
        withUnsafeBytes(of: salt.littleEndian) { CRC32.checksum($0) }
    }

    /// Appends one framed record to `writer`.
    static func frame(_ record: JournalRecord, seed: UInt32, into writer: inout BinaryWriter) {
        frame(kind: record.kind, seed: seed, into: &writer) { record.encodePayload(into: &$0) }
    }

    /// Appends one framed record of `kind` whose payload `encodePayload` writes.
    static func frame(kind: JournalRecord.Kind, seed: UInt32, into writer: inout BinaryWriter,
                      _ encodePayload: (inout BinaryWriter) -> Void) {
        let start = writer.bytes.count
        writer.append(UInt32(0))
        writer.append(UInt32(0))
        writer.append(kind.rawValue)
        encodePayload(&writer)
        let payloadLength = writer.bytes.count - start - frameSize
        let crc = writer.bytes.withUnsafeBytes { CRC32.update(seed, UnsafeRawBufferPointer(rebasing: $0[(start + 8)...])) }
        writer.patch(UInt32(payloadLength), at: start)
        writer.patch(crc, at: start + 4)
    }
}
