/// Loose blob format version 4: a value in checked pieces (docs/FORMAT.md, "Version 4"). The
/// 32-byte loose header, a 24-byte prologue, then pieces of a 24-byte header and a payload each,
/// so a read hands on each piece once it is checked and a write holds no more than a piece.
enum PiecedBlobFormat {
    static let version: UInt8 = 4
    /// Raw bytes in every piece but the last.
    static let pieceSize = 1 << 20
    /// The piece sizes a reader accepts (another writer may pick another within them).
    static let pieceSizes = (64 << 10)...(16 << 20)
    static let prologueSize = 24
    static let pieceHeaderSize = 24
    /// Where the first piece starts.
    static let firstPieceOffset = LooseBlobFormat.headerSize + prologueSize

    /// The prologue's fields.
    struct Prologue: Equatable {
        let pieceSize: Int
        let pieceCount: Int
        let salt: UInt64
        /// Sealed: the file's binding to its id; else 0.
        let binding: UInt64

        /// The 24 bytes as stored.
        var bytes: [UInt8] {
            var writer = BinaryWriter(capacity: prologueSize)
            writer.append(UInt32(pieceSize))
            writer.append(UInt32(pieceCount))
            writer.append(salt)
            writer.append(binding)
            return writer.bytes
        }

        /// Parses 24 bytes; `nil` when a field is out of range.
        init?(_ bytes: UnsafeRawBufferPointer) {
            guard bytes.count >= prologueSize else { return nil }
            var reader = BinaryReader(bytes)
            pieceSize = Int(reader.readUInt32()!)
            pieceCount = Int(reader.readUInt32()!)
            salt = reader.readUInt64()!
            binding = reader.readUInt64()!
            guard pieceSizes.contains(pieceSize) else { return nil }
        }

        init(pieceSize: Int, pieceCount: Int, salt: UInt64, binding: UInt64) {
            self.pieceSize = pieceSize
            self.pieceCount = pieceCount
            self.salt = salt
            self.binding = binding
        }

        /// How many pieces a value of `rawLength` bytes takes.
        static func pieceCount(rawLength: Int, pieceSize: Int) -> Int { (rawLength + pieceSize - 1) / pieceSize }
    }

    /// A piece's header fields.
    struct PieceHeader: Equatable {
        let storedLength: Int
        let rawLength: Int
        let index: Int
        let codec: CodecTag
        let checksum: UInt64

        /// The 16 bytes the checksum (and a seal) covers.
        var checkedBytes: [UInt8] {
            var writer = BinaryWriter(capacity: 16)
            writer.append(UInt32(storedLength))
            writer.append(UInt32(rawLength))
            writer.append(UInt32(index))
            writer.append(codec.rawValue)
            writer.append(UInt8(0))
            writer.append(UInt8(0))
            writer.append(UInt8(0))
            return writer.bytes
        }

        /// Parses 24 bytes; `nil` for an unknown codec or reserved bytes that are not 0.
        init?(_ bytes: UnsafeRawBufferPointer) {
            guard bytes.count >= pieceHeaderSize else { return nil }
            var reader = BinaryReader(bytes)
            storedLength = Int(reader.readUInt32()!)
            rawLength = Int(reader.readUInt32()!)
            index = Int(reader.readUInt32()!)
            guard let codec = CodecTag(rawValue: reader.readUInt8()!) else { return nil }
            self.codec = codec
            guard reader.readUInt8() == 0, reader.readUInt8() == 0, reader.readUInt8() == 0 else { return nil }
            checksum = reader.readUInt64()!
        }

        init(storedLength: Int, rawLength: Int, index: Int, codec: CodecTag, checksum: UInt64) {
            self.storedLength = storedLength
            self.rawLength = rawLength
            self.index = index
            self.codec = codec
            self.checksum = checksum
        }

        /// The checksum of a piece with these fields and `payload`, in a file of `salt`.
        func computedChecksum(of payload: UnsafeRawBufferPointer, salt: UInt64) -> UInt64 {
            var head = withUnsafeBytes(of: salt.littleEndian) { Array($0) }
            head += checkedBytes
            return head.withUnsafeBytes { XXH3.hash(payload, after: $0) }
        }

        /// The 24 bytes as stored.
        var bytes: [UInt8] {
            var all = checkedBytes
            withUnsafeBytes(of: checksum.littleEndian) { all += $0 }
            return all
        }
    }

    /// The checksum of the 32-byte header: XXH3-64 of its first 24 bytes and the prologue.
    static func headerChecksum(head: UnsafeRawBufferPointer, prologue: UnsafeRawBufferPointer) -> UInt64 {
        XXH3.hash(prologue, after: head)
    }

    /// The most bytes of payload (pieces with their headers) a value of `rawLength` bytes
    /// can take: every piece stored raw, plus a seal each.
    static func largestPayload(rawLength: Int) -> Int {
        let pieces = Prologue.pieceCount(rawLength: rawLength, pieceSize: pieceSizes.lowerBound)
        return prologueSize + rawLength + pieces * (pieceHeaderSize + CacheCipher.overhead)
    }
}
