/// The journal's header and record framing (docs/FORMAT.md, "Journal").
enum JournalFormat {
    static let magic: UInt32 = 0x4C4A_4342 // "BCJL"
    /// The newest version read. A plain journal is written as version 1 (which releases before
    /// encryption read too), an encrypted one as version 2, which they refuse to open.
    static let version: UInt16 = 2
    static let md5Algorithm: UInt8 = 1
    static let headerSize = 32
    /// length (4) + CRC (4) + type (1)
    static let frameSize = 9
    static let maxPayload = 16 << 20
    /// Bit 0 of header byte 7 (version 2): records, blobs and snapshot are sealed.
    static let encryptedFlag: UInt8 = 1

    struct Header: Equatable {
        let salt: UInt64
        let created: Int64
        /// The key check of an encrypted journal (`CacheCipher.keyCheck(salt:)`); `nil` when plain.
        var keyCheck: UInt32? = nil
    }

    /// A header for a new journal of salt `salt`, encrypted when `cipher` is given.
    static func header(salt: UInt64, created: Int64, cipher: CacheCipher?) -> Header {
        Header(salt: salt, created: created, keyCheck: cipher?.keyCheck(salt: salt))
    }

    static func encodeHeader(_ header: Header) -> [UInt8] {
        var writer = BinaryWriter(capacity: headerSize)
        writer.append(magic)
        writer.append(header.keyCheck == nil ? UInt16(1) : version)
        writer.append(md5Algorithm)
        writer.append(header.keyCheck == nil ? 0 : encryptedFlag)
        writer.append(header.salt)
        writer.append(header.created)
        writer.append(header.keyCheck ?? 0)
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
        let flags = reader.readUInt8()!
        let salt = reader.readUInt64()!
        let created = reader.readInt64()!
        let check = reader.readUInt32()!
        let crc = reader.readUInt32()!
        guard CRC32.checksum(UnsafeRawBufferPointer(rebasing: bytes[0..<28])) == crc else {
            return .failure(.damaged("journal header CRC mismatch"))
        }
        guard version <= self.version else { return .failure(.newerVersion(Int(version))) }
        guard algorithm == md5Algorithm else { return .failure(.damaged("unknown hash algorithm \(algorithm)")) }
        guard version == 2 || flags == 0 else { return .failure(.damaged("header flags \(flags) in a version 1 journal")) }
        // A flag this release does not know is a newer release's journal: refused, never rebuilt.
        guard flags & ~encryptedFlag == 0 else { return .failure(.newerVersion(Int(version))) }
        return .success(Header(salt: salt, created: created, keyCheck: flags & encryptedFlag != 0 ? check : nil))
    }

    /// The CRC state after the salt, from which each record's CRC continues.
    static func seed(salt: UInt64) -> UInt32 {
        withUnsafeBytes(of: salt.littleEndian) { CRC32.checksum($0) }
    }

    /// Appends one framed record to `writer`, its payload sealed under `cipher` when given.
    static func frame(_ record: JournalRecord, seed: UInt32, cipher: CacheCipher?, into writer: inout BinaryWriter) {
        frame(kind: record.kind, seed: seed, cipher: cipher, into: &writer) { record.encodePayload(into: &$0) }
    }

    /// Appends one framed record of `kind` whose payload `encodePayload` writes (then sealed
    /// under `cipher`, bound to the type, when given).
    static func frame(kind: JournalRecord.Kind, seed: UInt32, cipher: CacheCipher?, into writer: inout BinaryWriter,
                      _ encodePayload: (inout BinaryWriter) -> Void) {
        let start = writer.bytes.count
        writer.append(UInt32(0))
        writer.append(UInt32(0))
        writer.append(kind.rawValue)
        if let cipher {
            // Sealed where it was encoded: room for the nonce in front, the tag behind.
            writer.bytes.append(contentsOf: repeatElement(0, count: CacheCipher.nonceSize))
            encodePayload(&writer)
            writer.bytes.append(contentsOf: repeatElement(0, count: CacheCipher.tagSize))
            writer.bytes.withUnsafeMutableBytes {
                cipher.sealInPlace(UnsafeMutableRawBufferPointer(rebasing: $0[(start + frameSize)...]), context: .record(kind: kind.rawValue))
            }
        } else {
            encodePayload(&writer)
        }
        let payloadLength = writer.bytes.count - start - frameSize
        let crc = writer.bytes.withUnsafeBytes { CRC32.update(seed, UnsafeRawBufferPointer(rebasing: $0[(start + 8)...])) }
        writer.patch(UInt32(payloadLength), at: start)
        writer.patch(crc, at: start + 4)
    }
}
