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
///
///     let cipher = try CacheCipher(.aesGCM(key: key))
///     let sealed = cipher.seal(payload, context: .blob(id: id, codec: .lz4, rawLength: n))
struct CacheCipher: Sendable {
    /// Bytes a seal adds: the nonce in front, the tag behind.
    static let overhead = nonceSize + tagSize
    static let nonceSize = 12
    static let tagSize = 16
    /// The most GCM seals at once (2^39 − 256 bits): a larger value is `valueTooLarge`.
    static let maxPlaintext = (1 << 36) - 32

    private let valueKey: SymmetricKey
    private let indexKey: SymmetricKey
    private let idKey: SymmetricKey
    private let checkKey: SymmetricKey

    /// Derives the working keys; a master key that is not 256 bits is `invalidConfiguration`.
    init(_ encryption: BlobCache.Encryption) throws {
        let master = encryption.key
        guard master.bitCount == 256 else {
            throw BlobCacheError.invalidConfiguration(reason: "the encryption key must be 256 bits (32 bytes), got \(master.bitCount / 8) bytes")
        }
        func derive(_ label: String) -> SymmetricKey {
            HKDF<SHA256>.deriveKey(inputKeyMaterial: master, info: Array("BlobCache \(label)".utf8), outputByteCount: 32)
        }
        valueKey = derive("value key")
        indexKey = derive("index key")
        idKey = derive("blob id key")
        checkKey = derive("key check")
    }

    /// What a seal is bound to (its associated data): a sealed thing moved to another place
    /// does not open there.
    enum Context {
        /// A blob's payload, bound to its id, codec and value length (the header fields a
        /// reader acts on).
        case blob(id: BlobID, codec: CodecTag, rawLength: Int)
        /// A journal record's payload, bound to its type.
        case record(kind: UInt8)
        /// The index snapshot's image.
        case snapshot

        var associatedData: [UInt8] {
            switch self {
            case .blob(let id, let codec, let rawLength):
                var writer = BinaryWriter(capacity: 29)
                writer.append(bytes: Array("blob".utf8))
                writer.append(digestOf: id)
                writer.append(codec.rawValue)
                writer.append(UInt64(rawLength))
                return writer.bytes
            case .record(let kind): return Array("journal record".utf8) + [kind]
            case .snapshot: return Array("index snapshot".utf8)
            }
        }

        var isBlob: Bool { if case .blob = self { true } else { false } }
    }

    /// `nonce ‖ ciphertext ‖ tag` of `plaintext`.
    func seal(_ plaintext: UnsafeRawBufferPointer, context: Context) -> [UInt8] {
        // A 12-byte nonce always yields a combined form; sealing fails only for a wrong-sized key.
        let box = try! AES.GCM.seal(Self.borrowing(plaintext), using: key(for: context),
                                    authenticating: Data(context.associatedData))
        return box.combined!.withUnsafeBytes { Array($0) }
    }

    /// `bytes` as `Data` without a copy (swift-crypto's generic `DataProtocol` paths copy a
    /// raw buffer byte by byte; `Data` takes its contiguous fast path). Valid while `bytes` is.
    private static func borrowing(_ bytes: UnsafeRawBufferPointer) -> Data {
        guard let base = bytes.baseAddress, bytes.count > 0 else { return Data() }
        return Data(bytesNoCopy: UnsafeMutableRawPointer(mutating: base), count: bytes.count, deallocator: .none)
    }

    /// `body` of the plaintext of `sealed` (valid only inside it, no copy made), or `nil` when
    /// it is damaged, was sealed under another key or for another context.
    func open<Result>(_ sealed: UnsafeRawBufferPointer, context: Context,
                      _ body: (UnsafeRawBufferPointer) -> Result) -> Result? {
        let associatedData = context.associatedData
        return associatedData.withUnsafeBytes { associated -> Result? in
            guard sealed.count >= Self.overhead,
                  let box = try? AES.GCM.SealedBox(combined: Self.borrowing(sealed)),
                  let plain = try? AES.GCM.open(box, using: key(for: context), authenticating: Self.borrowing(associated))
            else { return nil }
            return plain.withUnsafeBytes(body)
        }
    }

    private func key(for context: Context) -> SymmetricKey { context.isBlob ? valueKey : indexKey }

    /// A blob's id under encryption: HMAC-MD5 of the value's bytes, keyed.
    func blobID(hashing value: UnsafeRawBufferPointer) -> BlobID {
        let code = HMAC<Insecure.MD5>.authenticationCode(for: value, using: idKey)
        return code.withUnsafeBytes { BlobID(digestBytes: $0)! }
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
