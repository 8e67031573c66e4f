import SystemPackage

/// Reads a pieced loose blob (format version 4) piece by piece: the header and prologue are
/// checked when it is opened, each piece (its place, length, checksum, under a key its tag, and
/// its decoding) before its bytes are handed on. A read holds one piece at a time.
///
///     var reader = try PiecedBlobReader.open(source, expecting: info, cipher: cipher).get()
///     while let piece = try reader.next().get() { try write(piece) }
struct PiecedBlobReader {
    /// Reads up to `count` bytes at an offset (fewer only at the end): a file, or a buffer.
    typealias Source = (_ offset: Int64, _ count: Int) throws -> [UInt8]

    private let source: Source
    private let fileSize: Int64
    private let prologue: PiecedBlobFormat.Prologue
    private let cipher: CacheCipher?
    /// Only the checksums are checked, nothing opened or decoded (fsck without the key).
    private var checksumsOnly = false
    /// The pieces are sealed (each a seal's nonce and tag longer).
    private var sealed = false
    /// The value's length, from the header (and the index, which it agrees with).
    let rawLength: Int
    private var index = 0
    private var offset = Int64(PiecedBlobFormat.firstPieceOffset)
    private var handedOn = 0

    /// Checks the header and prologue of the `fileSize`-byte file `source` reads; `info`, when
    /// given, is what the index knows of it; `id` (by default `info`'s) is what a sealed blob's
    /// binding is checked against.
    static func open(_ source: @escaping Source, fileSize: Int64, expecting info: BlobInfo?, id: BlobID? = nil,
                     cipher: CacheCipher?, checksumsOnly: Bool = false) throws -> Result<PiecedBlobReader, BlobDamage> {
        let front = try source(0, PiecedBlobFormat.firstPieceOffset)
        let header: LooseBlobFormat.Header
        switch front.withUnsafeBytes({ LooseBlobFormat.parseHeader($0) }) {
        case .failure(let damage): return .failure(damage)
        case .success(let parsed): header = parsed
        }
        guard case .pieces(let expected) = header.checksum else { return .failure(.header("not a pieced blob")) }
        guard front.count == PiecedBlobFormat.firstPieceOffset else {
            return .failure(.truncated("file of \(front.count) bytes has no complete header and prologue"))
        }
        guard Int64(LooseBlobFormat.headerSize) + Int64(header.payloadLength) == fileSize else {
            return .failure(.truncated("file is \(fileSize) bytes, header says \(LooseBlobFormat.headerSize + header.payloadLength)"))
        }
        if let info, info.rawLength != header.rawLength {
            return .failure(.sizeMismatch("header says \(header.rawLength) bytes of value, index says \(info.rawLength)"))
        }
        let checked = front.withUnsafeBytes { all in
            PiecedBlobFormat.headerChecksum(head: UnsafeRawBufferPointer(rebasing: all[..<LooseBlobFormat.checkedHeaderSize]),
                                            prologue: UnsafeRawBufferPointer(rebasing: all[LooseBlobFormat.headerSize...]))
        }
        guard checked == expected else { return .failure(.checksum("header XXH3 mismatch")) }
        guard let prologue = front.withUnsafeBytes({
            PiecedBlobFormat.Prologue(UnsafeRawBufferPointer(rebasing: $0[LooseBlobFormat.headerSize...]))
        }) else { return .failure(.header("piece size out of range")) }
        guard prologue.pieceCount == PiecedBlobFormat.Prologue.pieceCount(rawLength: header.rawLength, pieceSize: prologue.pieceSize) else {
            return .failure(.header("\(prologue.pieceCount) pieces cannot hold \(header.rawLength) bytes"))
        }
        switch (header.sealed, cipher) {
        case (true, nil) where checksumsOnly: break
        case (true, nil): return .failure(.sealing("blob is encrypted and no key was given"))
        case (false, _?): return .failure(.sealing("blob is not encrypted in an encrypted cache"))
        case (true, let cipher?):
            guard let id = id ?? info?.id else { return .failure(.sealing("sealed blob read without its id")) }
            let fields = Array(front[..<LooseBlobFormat.checkedHeaderSize]) + Array(front[LooseBlobFormat.headerSize..<LooseBlobFormat.headerSize + 16])
            guard cipher.binding(of: id, fields: fields) == prologue.binding else {
                return .failure(.sealing("the file is not bound to this blob id (moved, or sealed under another key)"))
            }
        case (false, nil): break
        }
        var reader = PiecedBlobReader(source: source, fileSize: fileSize, prologue: prologue, cipher: cipher,
                                      rawLength: header.rawLength)
        reader.checksumsOnly = checksumsOnly
        reader.sealed = header.sealed
        return .success(reader)
    }

    /// Opens the pieced blob `fd` holds (`path` names it in errors).
    static func open(_ fd: FileDescriptor, path: CachePath, io: FileIO, expecting info: BlobInfo?, id: BlobID? = nil,
                     cipher: CacheCipher?, checksumsOnly: Bool = false) throws -> Result<PiecedBlobReader, BlobDamage> {
        let size = try io.fileSize(fd, path: path)
        return try open({ offset, count in try io.read(fd, count: count, at: offset, path: path) }, fileSize: size,
                        expecting: info, id: id, cipher: cipher, checksumsOnly: checksumsOnly)
    }

    /// The next piece's bytes once checked, `nil` after the last; `.failure` names the damage
    /// (and nothing more may be read).
    mutating func next() throws -> Result<[UInt8]?, BlobDamage> {
        guard index < prologue.pieceCount else {
            guard offset == fileSize else { return .failure(.sizeMismatch("\(fileSize - offset) bytes after the last piece")) }
            return .success(nil)
        }
        let head = try source(offset, PiecedBlobFormat.pieceHeaderSize)
        guard head.count == PiecedBlobFormat.pieceHeaderSize else { return .failure(.truncated("piece \(index) has no complete header")) }
        guard let piece = head.withUnsafeBytes({ PiecedBlobFormat.PieceHeader($0) }) else {
            return .failure(.header("piece \(index): unknown codec or reserved bytes set"))
        }
        let expectedRaw = min(prologue.pieceSize, rawLength - handedOn)
        guard piece.index == index, piece.rawLength == expectedRaw else {
            return .failure(.header("piece \(index) says it is piece \(piece.index) of \(piece.rawLength) bytes"))
        }
        let payloadStart = offset + Int64(PiecedBlobFormat.pieceHeaderSize)
        let largest = piece.rawLength + (sealed ? CacheCipher.overhead : 0)
        guard piece.storedLength <= largest, payloadStart + Int64(piece.storedLength) <= fileSize else {
            return .failure(.truncated("piece \(index) of \(piece.storedLength) bytes does not fit"))
        }
        let payload = try source(payloadStart, piece.storedLength)
        guard payload.count == piece.storedLength else { return .failure(.truncated("file ended inside piece \(index)")) }
        let checksum = payload.withUnsafeBytes { piece.computedChecksum(of: $0, salt: prologue.salt) }
        guard checksum == piece.checksum else { return .failure(.checksum("piece \(index): XXH3 mismatch")) }
        let decoded: [UInt8]?
        if checksumsOnly {
            decoded = []
        } else if let cipher {
            let context = CacheCipher.Context.piece(salt: prologue.salt, header: piece.checkedBytes)
            guard let plain = payload.withUnsafeBytes({ cipher.open($0, context: context) }) else {
                return .failure(.sealing("piece \(index): AES-GCM tag does not verify"))
            }
            decoded = Self.decode(plain, codec: piece.codec, rawLength: piece.rawLength)
        } else {
            decoded = Self.decode(payload, codec: piece.codec, rawLength: piece.rawLength)
        }
        guard let decoded else {
            return .failure(.decompression("piece \(index): \(piece.codec.name) payload does not decode to \(piece.rawLength) bytes"))
        }
        index += 1
        offset = payloadStart + Int64(piece.storedLength)
        handedOn += checksumsOnly ? piece.rawLength : decoded.count
        return .success(decoded)
    }

    private static func decode(_ payload: [UInt8], codec: CodecTag, rawLength: Int) -> [UInt8]? {
        if codec == .none { return payload.count == rawLength ? payload : nil }
        return payload.withUnsafeBytes { Compression.decodeSequentially($0, tag: codec, rawCount: rawLength) }
    }

    /// Checks and decodes a whole pieced blob held in memory: the value, or its damage.
    static func decodeWhole(file bytes: UnsafeRawBufferPointer, expecting info: BlobInfo?, id: BlobID?,
                            cipher: CacheCipher?) -> Result<[UInt8], BlobDamage> {
        let source: Source = { offset, count in
            let start = Int(min(offset, Int64(bytes.count)))
            return Array(bytes[start..<min(start + count, bytes.count)])
        }
        do {
            var reader: PiecedBlobReader
            switch try open(source, fileSize: Int64(bytes.count), expecting: info, id: id, cipher: cipher) {
            case .failure(let damage): return .failure(damage)
            case .success(let opened): reader = opened
            }
            var value: [UInt8] = []
            // The header's length is trusted no further than the file could decode to.
            value.reserveCapacity(min(reader.rawLength, Compression.maxRawCount(payloadCount: bytes.count, tag: .zlib)))
            while true {
                switch try reader.next() {
                case .failure(let damage): return .failure(damage)
                case .success(nil): return .success(value)
                case .success(let piece?): value += piece
                }
            }
        } catch {
            return .failure(.truncated("unreadable: \(error)"))   // a buffer source never throws
        }
    }
}

extension PiecedBlobReader {
    /// Checks the loose blob file at `path` in full, a piece at a time (bounded memory), when it
    /// is a pieced blob: every check a read makes and, unless `hashing` is false, that its
    /// content hashes to `id`. `nil` when it is not a pieced blob (or cannot be opened); else
    /// its header and size, or the damage.
    static func verifyFile(at path: CachePath, io: FileIO, id: BlobID, cipher: CacheCipher?, hashing: Bool = true,
                           checksumsOnly: Bool = false) -> (header: LooseBlobFormat.Header?, size: Int, damage: BlobDamage?)? {
        guard let fd = try? io.openIfExists(path) else { return nil }
        defer { io.close(fd) }
        guard let head = try? io.read(fd, count: LooseBlobFormat.headerSize, at: 0, path: path),
              head.count == LooseBlobFormat.headerSize, head[4] == PiecedBlobFormat.version,
              let size = try? io.fileSize(fd, path: path) else { return nil }
        let header = try? head.withUnsafeBytes { LooseBlobFormat.parseHeader($0) }.get()
        var reader: PiecedBlobReader
        switch Result(catching: { try open(fd, path: path, io: io, expecting: nil, id: id, cipher: cipher, checksumsOnly: checksumsOnly) }) {
        case .failure: return (header, Int(size), .missing("unreadable"))
        case .success(.failure(let damage)): return (header, Int(size), damage)
        case .success(.success(let opened)): reader = opened
        }
        var hash = RunningBlobHash(BlobHasher(cipher))
        while true {
            switch Result(catching: { try reader.next() }) {
            case .failure: return (header, Int(size), .missing("unreadable"))
            case .success(.failure(let damage)): return (header, Int(size), damage)
            case .success(.success(let piece?)): if hashing && !checksumsOnly { piece.withUnsafeBytes { hash.update($0) } }
            case .success(.success(nil)):
                if hashing && !checksumsOnly, case let actual = hash.finish(), actual != id {
                    return (header, Int(size), .digest("content hashes to \(actual), not its name"))
                }
                return (header, Int(size), nil)
            }
        }
    }
}
