import Crypto
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The keys an encrypted cache works with, each derived from the master key with HKDF-SHA256
/// under its own label (docs/FORMAT.md, "Encryption"), and the sealing they do: blob payloads,
/// journal records and the snapshot with AES-256-GCM (a random 96-bit nonce per seal, stored as
/// `nonce ‖ ciphertext ‖ tag`), blob ids with HMAC-MD5, and the journal header's key check.
/// A class: the read path passes it along at every get, and a struct of five references paid
/// a retain and a release for each (0.25 µs a get in `perf`).
///
///     let cipher = try CacheCipher(.aesGCM(key: key))
///     let sealed = cipher.seal(payload, context: .blob(id: id, codec: .lz4, rawLength: n))
final class CacheCipher: Sendable {
    /// Bytes a seal adds: the nonce in front, the tag behind.
    static let overhead = nonceSize + tagSize
    static let nonceSize = AESGCMKey.nonceSize
    static let tagSize = AESGCMKey.tagSize
    /// The most GCM seals at once (2^39 − 256 bits): a larger value is `valueTooLarge`.
    static let maxPlaintext = (1 << 36) - 32

    private let valueKey: AESGCMKey
    private let indexKey: AESGCMKey
    /// HMAC-MD5 under the blob id key, its key already absorbed: each id hashes from a copy.
    private let keyedMD5: HMAC<Insecure.MD5>
    private let checkKey: SymmetricKey
    /// Binds a pieced blob's file to its id (its header's binding field).
    private let bindingKey: SymmetricKey
    private let nonces = NonceSource()

    /// Derives the working keys; a master key that is not 256 bits is `invalidConfiguration`.
    init(_ encryption: BlobCache.Encryption) throws {
        let master = encryption.key
        guard master.bitCount == 256 else {
            throw BlobCacheError.invalidConfiguration(reason: "the encryption key must be 256 bits (32 bytes), got \(master.bitCount / 8) bytes")
        }
        func derive(_ label: String) -> SymmetricKey {
            HKDF<SHA256>.deriveKey(inputKeyMaterial: master, info: Array("BlobCache \(label)".utf8), outputByteCount: 32)
        }
        valueKey = AESGCMKey(derive("value key"))
        indexKey = AESGCMKey(derive("index key"))
        keyedMD5 = HMAC(key: derive("blob id key"))
        checkKey = derive("key check")
        bindingKey = derive("blob binding")
    }

    /// What a seal is bound to (its associated data): a sealed thing moved to another place
    /// does not open there.
    enum Context {
        /// A blob's payload, bound to its id, codec and value length (the header fields a
        /// reader acts on).
        case blob(id: BlobID, codec: CodecTag, rawLength: Int)
        /// A piece of a pieced blob, bound to its file's salt and its piece header (length,
        /// index, codec): moved to another file or place, it does not open.
        case piece(salt: UInt64, header: [UInt8])
        /// A journal record's payload, bound to its type.
        case record(kind: UInt8)
        /// The index snapshot's image.
        case snapshot

        /// `body` of the associated data, built on the stack.
        func withAssociatedData<Result>(_ body: (UnsafeRawBufferPointer) -> Result) -> Result {
            withUnsafeTemporaryAllocation(byteCount: 48, alignment: 1) { buffer in
                var count = 0
                func append(_ bytes: UnsafeRawBufferPointer) {
                    precondition(count + bytes.count <= buffer.count, "associated data longer than its buffer")
                    UnsafeMutableRawBufferPointer(rebasing: buffer[count..<count + bytes.count]).copyMemory(from: bytes)
                    count += bytes.count
                }
                switch self {
                case .blob(let id, let codec, let rawLength):
                    Self.blobLabel.withUnsafeBytes { append($0) }
                    withUnsafeBytes(of: (id.high.bigEndian, id.low.bigEndian)) { append($0) }  // MD5's printed order
                    withUnsafeBytes(of: codec.rawValue) { append($0) }
                    withUnsafeBytes(of: UInt64(rawLength).littleEndian) { append($0) }
                case .piece(let salt, let header):
                    Self.pieceLabel.withUnsafeBytes { append($0) }
                    withUnsafeBytes(of: salt.littleEndian) { append($0) }
                    header.withUnsafeBytes { append($0) }
                case .record(let kind):
                    Self.recordLabel.withUnsafeBytes { append($0) }
                    withUnsafeBytes(of: kind) { append($0) }
                case .snapshot:
                    Self.snapshotLabel.withUnsafeBytes { append($0) }
                }
                return body(UnsafeRawBufferPointer(rebasing: buffer[..<count]))
            }
        }

        private static let blobLabel = Array("blob".utf8)
        private static let pieceLabel = Array("blob piece".utf8)
        private static let recordLabel = Array("journal record".utf8)
        private static let snapshotLabel = Array("index snapshot".utf8)

        var isBlob: Bool {
            switch self {
            case .blob, .piece: true
            case .record, .snapshot: false
            }
        }
    }

    /// `nonce ‖ ciphertext ‖ tag` of `plaintext`, after `headroom` zero bytes (room for a
    /// header the caller writes).
    func seal(_ plaintext: UnsafeRawBufferPointer, context: Context, headroom: Int = 0) -> [UInt8] {
        let count = headroom + Self.overhead + plaintext.count
        return [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
            let output = UnsafeMutableRawBufferPointer(buffer)
            output[..<headroom].initializeMemory(as: UInt8.self, repeating: 0)
            seal(plaintext, into: UnsafeMutableRawBufferPointer(rebasing: output[headroom...]), context: context)
            initialized = count
        }
    }

    /// Seals in place: `buffer` holds room for the nonce, then the plaintext, then room for
    /// the tag, and ends as `nonce ‖ ciphertext ‖ tag` (no copy of the plaintext).
    func sealInPlace(_ buffer: UnsafeMutableRawBufferPointer, context: Context) {
        precondition(buffer.count >= Self.overhead)
        let plaintext = UnsafeRawBufferPointer(rebasing: buffer[Self.nonceSize..<(buffer.count - Self.tagSize)])
        seal(plaintext, into: buffer, context: context)
    }

    /// Writes `nonce ‖ ciphertext ‖ tag` of `plaintext` to `output` (exactly `overhead` bytes
    /// more; the plaintext may already sit where the ciphertext goes).
    private func seal(_ plaintext: UnsafeRawBufferPointer, into output: UnsafeMutableRawBufferPointer, context: Context) {
        let nonce = UnsafeMutableRawBufferPointer(rebasing: output[..<Self.nonceSize])
        nonces.next(into: nonce)
        context.withAssociatedData { associated in
            key(for: context).seal(plaintext, nonce: UnsafeRawBufferPointer(nonce), associatedData: associated,
                                   into: UnsafeMutableRawBufferPointer(rebasing: output[Self.nonceSize...]))
        }
    }

    /// The plaintext of `sealed`, or `nil` when it is damaged, was sealed under another key or
    /// for another context.
    func open(_ sealed: UnsafeRawBufferPointer, context: Context) -> [UInt8]? {
        guard sealed.count >= Self.overhead else { return nil }
        var opened = false
        let plain = [UInt8](unsafeUninitializedCapacity: sealed.count - Self.overhead) { buffer, initialized in
            opened = open(sealed, context: context, into: UnsafeMutableRawBufferPointer(buffer))
            initialized = buffer.count
        }
        return opened ? plain : nil
    }

    /// `body` of the plaintext of `sealed` (valid only inside it), or `nil` when it is
    /// damaged, was sealed under another key or for another context.
    func open<Result>(_ sealed: UnsafeRawBufferPointer, context: Context,
                      _ body: (UnsafeRawBufferPointer) -> Result) -> Result? {
        guard sealed.count >= Self.overhead else { return nil }
        return withUnsafeTemporaryAllocation(byteCount: sealed.count - Self.overhead, alignment: 16) { plain in
            open(sealed, context: context, into: plain) ? body(UnsafeRawBufferPointer(plain)) : nil
        }
    }

    /// Opens `sealed` where it lies: the plaintext, which overwrites the ciphertext (`sealed`
    /// then holds nothing of value whatever the outcome) and is valid as long as `sealed` is,
    /// or `nil` when it is damaged, was sealed under another key or for another context.
    func openInPlace(_ sealed: UnsafeMutableRawBufferPointer, context: Context) -> UnsafeRawBufferPointer? {
        guard sealed.count >= Self.overhead else { return nil }
        let plain = UnsafeMutableRawBufferPointer(rebasing: sealed[Self.nonceSize..<(sealed.count - Self.tagSize)])
        return open(UnsafeRawBufferPointer(sealed), context: context, into: plain) ? UnsafeRawBufferPointer(plain) : nil
    }

    /// Opens `sealed` (at least `overhead` bytes) into `plain`, its exact plaintext size (or
    /// in place: `plain` starting where the ciphertext does); false when it is damaged, was
    /// sealed under another key or for another context (`plain` then holds nothing of value).
    func open(_ sealed: UnsafeRawBufferPointer, context: Context, into plain: UnsafeMutableRawBufferPointer) -> Bool {
        context.withAssociatedData { associated in
            key(for: context).open(UnsafeRawBufferPointer(rebasing: sealed[Self.nonceSize...]),
                                   nonce: UnsafeRawBufferPointer(rebasing: sealed[..<Self.nonceSize]),
                                   associatedData: associated, into: plain)
        }
    }

    /// Starts opening `sealed` (`nonce ‖ ciphertext ‖ tag`) in pieces: the opening, bound to
    /// `context`, the ciphertext to feed it and the tag to finish it with. `nil` when `sealed`
    /// is too short to be a seal, or where pieces are not supported (CryptoKit).
    func beginOpening(_ sealed: UnsafeRawBufferPointer, context: Context)
        -> (opening: AESGCMKey.Opening, ciphertext: UnsafeRawBufferPointer, tag: UnsafeRawBufferPointer)? {
        guard sealed.count >= Self.overhead else { return nil }
        let opening = context.withAssociatedData { associated in
            key(for: context).beginOpening(nonce: UnsafeRawBufferPointer(rebasing: sealed[..<Self.nonceSize]),
                                           associatedData: associated)
        }
        guard let opening else { return nil }
        return (opening, UnsafeRawBufferPointer(rebasing: sealed[Self.nonceSize..<(sealed.count - Self.tagSize)]),
                UnsafeRawBufferPointer(rebasing: sealed[(sealed.count - Self.tagSize)...]))
    }

    private func key(for context: Context) -> AESGCMKey { context.isBlob ? valueKey : indexKey }

    /// A blob's id under encryption: HMAC-MD5 of the value's bytes, keyed.
    func blobID(hashing value: UnsafeRawBufferPointer) -> BlobID {
        var hmac = keyedMD5
        hmac.update(data: value)
        return hmac.finalize().withUnsafeBytes { BlobID(digestBytes: $0)! }
    }

    /// The keyed MD5 a blob id is computed with, for a value that arrives in pieces.
    var blobIDHash: HMAC<Insecure.MD5> { keyedMD5 }

    /// A pieced blob's binding to `id`: the first 8 bytes of HMAC-SHA256 under the binding key
    /// of the id and `fields` (the header's first 24 bytes and the prologue's first 16).
    ///
    ///     let binding = cipher.binding(of: id, fields: head + prologue.prefix(16))
    func binding(of id: BlobID, fields: [UInt8]) -> UInt64 {
        var hmac = HMAC<SHA256>(key: bindingKey)
        withUnsafeBytes(of: (id.high.bigEndian, id.low.bigEndian)) { hmac.update(data: $0) }
        fields.withUnsafeBytes { hmac.update(data: $0) }
        return hmac.finalize().withUnsafeBytes { UInt64(littleEndian: $0.loadUnaligned(as: UInt64.self)) }
    }

    /// The journal header's key check for a journal of salt `salt`: the first 4 bytes of
    /// HMAC-SHA256(check key, salt). A wrong key passes it with probability 2^-32.
    func keyCheck(salt: UInt64) -> UInt32 {
        let code = withUnsafeBytes(of: salt.littleEndian) { HMAC<SHA256>.authenticationCode(for: $0, using: checkKey) }
        return code.withUnsafeBytes { UInt32(littleEndian: $0.loadUnaligned(as: UInt32.self)) }
    }
}

/// How the ids of a cache's blobs are computed: MD5 of the bytes, or keyed (encryption).
enum BlobHasher: Sendable {
    case md5
    case keyed(CacheCipher)

    init(_ cipher: CacheCipher?) { self = cipher.map { .keyed($0) } ?? .md5 }

    /// The id of `value`.
    func id(of value: UnsafeRawBufferPointer) -> BlobID {
        switch self {
        case .md5: BlobID(hashing: value)
        case .keyed(let cipher): cipher.blobID(hashing: value)
        }
    }

    /// The id of `value`.
    func id(of value: [UInt8]) -> BlobID { value.withUnsafeBytes { id(of: $0) } }
}

extension JournalFormat.Header {
    /// Throws unless `cipher` fits this journal: no key for a plain one, the right key for an
    /// encrypted one (its key check). `path` names the cache in the error.
    func requireKey(_ cipher: CacheCipher?, cache path: String) throws {
        switch (keyCheck, cipher) {
        case (nil, nil): return
        case (nil, _?): throw BlobCacheError.cacheNotEncrypted(path: path)
        case (_?, nil): throw BlobCacheError.encryptionKeyRequired(path: path)
        case (let check?, let cipher?):
            guard cipher.keyCheck(salt: salt) == check else { throw BlobCacheError.wrongEncryptionKey(path: path) }
        }
    }
}
