/// The loose blob file: a 32-byte header, then the payload (docs/FORMAT.md).
enum LooseBlobFormat {
    static let magic: UInt32 = 0x4C42_4342 // "BCBL" read as a little-endian word
    /// The version written (XXH3); versions 1 (CRC-32) and 2 (XXH64) are still read.
    static let version: UInt8 = 3
    static let headerSize = 32
    /// Header bytes the checksum covers (all but the checksum field itself).
    static let checkedHeaderSize = 24

    /// Fills the header in `buffer[offset..<offset+32]` for the payload that follows it.
    /// `sealed`: the payload is AES-GCM sealed (flag bit 0 of byte 6).
    static func writeHeader(into buffer: inout [UInt8], at offset: Int, codec: CodecTag, rawLength: Int, sealed: Bool) {
        let payloadLength = buffer.count - offset - headerSize
        var header = BinaryWriter(capacity: headerSize)
        header.append(magic)
        header.append(version)
        header.append(codec.rawValue)
        header.append(sealed ? sealedFlag : 0)
        header.append(UInt8(0))
        header.append(UInt64(rawLength))
        header.append(UInt64(payloadLength))
        buffer.replaceSubrange(offset..<offset + checkedHeaderSize, with: header.bytes)
        let digest = buffer.withUnsafeBytes { all in
            checksum(of: UnsafeRawBufferPointer(rebasing: all[(offset + headerSize)...]),
                     after: UnsafeRawBufferPointer(rebasing: all[offset..<offset + checkedHeaderSize]))
        }
        withUnsafeBytes(of: digest.littleEndian) { buffer.replaceSubrange(offset + checkedHeaderSize..<offset + headerSize, with: $0) }
    }

    /// The checksum a header written now carries for `payload` after its first 24 bytes `head`:
    /// XXH3-64 of the two, as if they were one buffer.
    ///
    ///     let digest = LooseBlobFormat.checksum(of: payload, after: header[0..<24])
    static func checksum(of payload: UnsafeRawBufferPointer, after head: UnsafeRawBufferPointer) -> UInt64 {
        XXH3.hash(payload, after: head)
    }

    /// Bit 0 of byte 6: the payload is sealed (encryption); the other bits are 0.
    static let sealedFlag: UInt8 = 1

    /// The checksum a header carries, by the version that wrote it.
    enum Checksum: Equatable, Sendable {
        /// Version 1: zlib's CRC-32 of header bytes 0..<28 and the payload.
        case crc32(UInt32)
        /// Version 2: `XXHash64.hash(payload, after: header bytes 0..<24)`.
        case xxh64(UInt64)
        /// Version 3: `XXH3.hash(payload, after: header bytes 0..<24)`.
        case xxh3(UInt64)
        /// Version 4 (pieced): `XXH3.hash(prologue, after: header bytes 0..<24)`; each piece
        /// carries its own (`PiecedBlobReader`).
        case pieces(UInt64)

        /// The digest a payload must match, and what a mismatch is called; `nil` for CRC-32.
        var digest: (value: UInt64, mismatch: String)? {
            switch self {
            case .crc32, .pieces: nil
            case .xxh64(let value): (value, "XXH64 mismatch")
            case .xxh3(let value): (value, "XXH3 mismatch")
            }
        }

        /// This kind's digest of `payload` after `head`; `nil` for CRC-32, which covers header
        /// bytes 0..<28 and is checked on its own.
        func compute(_ payload: UnsafeRawBufferPointer, after head: UnsafeRawBufferPointer) -> UInt64? {
            switch self {
            case .crc32, .pieces: nil
            case .xxh64: XXHash64.hash(payload, after: head)
            case .xxh3: XXH3.hash(payload, after: head)
            }
        }
    }

    /// What a header says, before the payload is checked.
    struct Header {
        let codec: CodecTag
        let rawLength: Int
        let payloadLength: Int
        let checksum: Checksum
        /// The payload is AES-GCM sealed.
        let sealed: Bool
    }

    /// Parses and sanity-checks a header; the failure says what is wrong.
    static func parseHeader(_ bytes: UnsafeRawBufferPointer) -> Result<Header, BlobDamage> {
        var reader = BinaryReader(bytes)
        guard bytes.count >= headerSize else { return .failure(.truncated("file of \(bytes.count) bytes has no complete header")) }
        guard reader.readUInt32() == magic else { return .failure(.header("bad magic")) }
        let version = reader.readUInt8()!
        guard (1...PiecedBlobFormat.version).contains(version) else { return .failure(.header("unknown format version \(version)")) }
        guard let codec = CodecTag(rawValue: reader.readUInt8()!) else { return .failure(.header("unknown codec")) }
        let flags = reader.readUInt8()!
        _ = reader.readUInt8()
        guard flags & ~sealedFlag == 0 else { return .failure(.header("unknown flags \(flags)")) }
        let raw = reader.readUInt64()!, stored = reader.readUInt64()!
        let checksum: Checksum
        if version == 1 {
            _ = reader.readUInt32()
            checksum = .crc32(reader.readUInt32()!)
        } else {
            let digest = reader.readUInt64()!
            checksum = switch version {
            case 2: .xxh64(digest)
            case 3: .xxh3(digest)
            default: .pieces(digest)
            }
        }
        guard raw <= UInt64(BlobInfo.maxLength), stored <= UInt64(BlobInfo.maxLength) else {
            return .failure(.header("impossible length"))
        }
        return .success(Header(codec: codec, rawLength: Int(raw), payloadLength: Int(stored), checksum: checksum,
                              sealed: flags & sealedFlag != 0))
    }

    /// The largest file that can hold `info`'s blob: its payload may have been re-encoded since
    /// the index heard of it (recompression), but a payload is never longer than its value
    /// (one that does not compress is stored raw), plus a seal's nonce and tag.
    static func largestFile(holding info: BlobInfo) -> Int64 {
        Int64(headerSize) + Int64(max(info.payloadLength, PiecedBlobFormat.largestPayload(rawLength: info.rawLength)))
    }

    /// Checks a whole loose blob file and decodes it (opening its seal under `cipher`, bound
    /// to `id`, by default `info`'s); `.failure` names the damage.
    static func decode(file bytes: UnsafeRawBufferPointer, expecting info: BlobInfo?, id: BlobID? = nil,
                       cipher: CacheCipher?, checking check: PayloadCheck = .everything) -> Result<[UInt8], BlobDamage> {
        decode(file: .borrowed(bytes), expecting: info, id: id, cipher: cipher, checking: check)
    }

    /// `decode(file:…)` of a file the read holds as `buffer`: one it owns is opened in place.
    static func decode(file buffer: ReadBuffer, expecting info: BlobInfo?, id: BlobID? = nil,
                       cipher: CacheCipher?, checking check: PayloadCheck = .everything) -> Result<[UInt8], BlobDamage> {
        let bytes = buffer.bytes
        let header: Header
        switch parseHeader(bytes) {
        case .failure(let damage): return .failure(damage)
        case .success(let parsed): header = parsed
        }
        if case .pieces = header.checksum {
            return PiecedBlobReader.decodeWhole(file: bytes, expecting: info, id: id ?? info?.id, cipher: cipher)
        }
        guard header.payloadLength == bytes.count - headerSize else {
            return .failure(.truncated("file is \(bytes.count) bytes, header says \(headerSize + header.payloadLength)"))
        }
        // Only the value's length must agree with the index: the encoding is the file's own
        // (recompression swaps it atomically by rename before the journal hears of it).
        if let info, info.rawLength != header.rawLength {
            return .failure(.sizeMismatch("header says \(header.rawLength) bytes of value, index says \(info.rawLength)"))
        }
        let payload = UnsafeRawBufferPointer(rebasing: bytes[headerSize...])
        let id = id ?? info?.id
        func decoded(first: (() -> Void)? = nil) -> Result<[UInt8], BlobDamage> {
            SealedPayload.decode(buffer.suffix(from: headerSize), sealed: header.sealed, cipher: cipher, id: id, codec: header.codec,
                                 rawLength: header.rawLength, first: first)
        }
        if check.tagSuffices(sealed: header.sealed, cipher: cipher) { return decoded() }
        guard let (expected, mismatch) = header.checksum.digest else {
            guard case .crc32(let expected) = header.checksum,
                  CRC32.update(CRC32.checksum(UnsafeRawBufferPointer(rebasing: bytes[0..<28])), payload) == expected else {
                return .failure(.checksum("CRC mismatch"))
            }
            return decoded()
        }
        // With an index record vouching for the value's length, the payload is hashed while it
        // is decoded (a large one on every core); the bytes are returned only if the hash
        // matches (decoding damaged input is memory-safe, and its result is then dropped).
        // Without one (fsck, adoption), the header's lengths are trusted only once the hash
        // matches, so a flipped bit cannot make the decoder allocate what it claims.
        let head = UnsafeRawBufferPointer(rebasing: bytes[0..<checkedHeaderSize])
        if info == nil {
            guard header.checksum.compute(payload, after: head) == expected else { return .failure(.checksum(mismatch)) }
            return decoded()
        }
        var digest: UInt64?
        let result = decoded(first: { digest = header.checksum.compute(payload, after: head) })
        guard digest == expected else { return .failure(.checksum(mismatch)) }
        return result
    }
}
