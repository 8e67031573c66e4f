import Crypto
#if canImport(CCryptoBoringSSL)
import CCryptoBoringSSL
#elseif canImport(Darwin)
import Darwin
#endif
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// One AES-256-GCM key, made ready once for the life of the cache: sealing and opening in
/// caller-owned buffers, the nonce given, output exactly standard AES-GCM (`ciphertext ‖ tag`,
/// 16-byte tag), so swift-crypto's `AES.GCM.open` opens what this seals and back.
///
/// On Linux it holds a BoringSSL `EVP_AEAD_CTX` (the C layer swift-crypto is built on, whose
/// seal and open only read the context, so one serves every thread). swift-crypto's own
/// `AES.GCM.seal` sets up a new context per call (key schedule, GHASH tables, a fresh output),
/// which costs far more than sealing a small value with a kept context. Where swift-crypto is CryptoKit (Apple's systems), its API is used as is.
/// `CCryptoBoringSSL` is none of swift-crypto's products and may change in any release, so
/// Package.swift pins swift-crypto to one.
///
///     let key = AESGCMKey(SymmetricKey(size: .bits256))
///     key.seal(plaintext, nonce: nonce, associatedData: ad, into: ciphertextAndTag)
final class AESGCMKey: @unchecked Sendable {
    static let tagSize = 16
    static let nonceSize = 12
    /// Whether sealing uses a kept BoringSSL context (true on Linux); false where swift-crypto
    /// is CryptoKit and each call sets its key up anew. A test pins it on Linux, so a
    /// swift-crypto that stops exposing its C layer fails loudly instead of slowing down.
    static let keepsContext: Bool = {
        #if canImport(CCryptoBoringSSL)
        true
        #else
        false
        #endif
    }()

    #if canImport(CCryptoBoringSSL)
    /// Written once, here, then only read (BoringSSL's seal and open take it `const`).
    private let context: UnsafeMutablePointer<EVP_AEAD_CTX>
    /// The same key made ready for BoringSSL's streaming AES-GCM (`EVP_aes_256_gcm`, for
    /// `beginOpening`): written once, here, then only copied from.
    private let streamingTemplate: UnsafeMutablePointer<EVP_CIPHER_CTX>

    init(_ key: SymmetricKey) {
        precondition(key.bitCount == 256, "AES-256-GCM needs a 256-bit key")
        let context = UnsafeMutablePointer<EVP_AEAD_CTX>.allocate(capacity: 1)
        context.initialize(to: EVP_AEAD_CTX())
        let template = CCryptoBoringSSL_EVP_CIPHER_CTX_new()!
        let ready = key.withUnsafeBytes { key in
            let bytes = key.baseAddress?.assumingMemoryBound(to: UInt8.self)
            return CCryptoBoringSSL_EVP_AEAD_CTX_init(context, CCryptoBoringSSL_EVP_aead_aes_256_gcm(), bytes, key.count,
                                                      Self.tagSize, nil) == 1
                && CCryptoBoringSSL_EVP_DecryptInit_ex(template, CCryptoBoringSSL_EVP_aes_256_gcm(), nil, bytes, nil) == 1
        }
        precondition(ready, "BoringSSL refused a 256-bit AES-GCM key")
        self.context = context
        streamingTemplate = template
    }

    deinit {
        CCryptoBoringSSL_EVP_CIPHER_CTX_free(streamingTemplate)   // cleanses the expanded key
        CCryptoBoringSSL_EVP_AEAD_CTX_cleanup(context)
        // The expanded key lives in the context itself, which cleanup does not wipe.
        CCryptoBoringSSL_OPENSSL_cleanse(context, MemoryLayout<EVP_AEAD_CTX>.size)
        context.deallocate()
    }

    /// Seals `plaintext` into `output` (exactly `plaintext.count + tagSize` bytes; it may
    /// start where `plaintext` does, which BoringSSL allows: sealing in place).
    func seal(_ plaintext: UnsafeRawBufferPointer, nonce: UnsafeRawBufferPointer,
              associatedData: UnsafeRawBufferPointer, into output: UnsafeMutableRawBufferPointer) {
        precondition(output.count == plaintext.count + Self.tagSize && nonce.count == Self.nonceSize)
        var written = 0
        let sealed = CCryptoBoringSSL_EVP_AEAD_CTX_seal(
            context, output.bytes, &written, output.count, nonce.bytes, nonce.count,
            plaintext.bytes, plaintext.count, associatedData.bytes, associatedData.count)
        precondition(sealed == 1 && written == output.count, "AES-GCM seal failed")
    }

    /// Opens `ciphertextAndTag` into `output` (exactly `ciphertextAndTag.count - tagSize`
    /// bytes; it may start where the ciphertext does, which BoringSSL allows: opening in
    /// place); false when the tag does not verify (`output` then holds nothing of value).
    func open(_ ciphertextAndTag: UnsafeRawBufferPointer, nonce: UnsafeRawBufferPointer,
              associatedData: UnsafeRawBufferPointer, into output: UnsafeMutableRawBufferPointer) -> Bool {
        precondition(output.count + Self.tagSize == ciphertextAndTag.count && nonce.count == Self.nonceSize)
        var written = 0
        let opened = CCryptoBoringSSL_EVP_AEAD_CTX_open(
            context, output.bytes, &written, output.count, nonce.bytes, nonce.count,
            ciphertextAndTag.bytes, ciphertextAndTag.count, associatedData.bytes, associatedData.count)
        return opened == 1 && written == output.count
    }

    /// Starts opening one sealed payload in pieces (BoringSSL's streaming GCM), for a caller
    /// that works on the first pieces while later ones are opened; `nil` if BoringSSL fails.
    func beginOpening(nonce: UnsafeRawBufferPointer, associatedData: UnsafeRawBufferPointer) -> Opening? {
        Opening(template: streamingTemplate, nonce: nonce, associatedData: associatedData)
    }

    /// One payload being opened a piece at a time, by one thread at a time. The plaintext of
    /// each piece comes out before the tag is checked: nothing made from it may be handed out
    /// until `finish(tag:)` returns true.
    ///
    ///     guard let opening = key.beginOpening(nonce: nonce, associatedData: ad) else { … }
    ///     opening.update(piece, into: plain)            // for each piece, in order
    ///     let authentic = opening.finish(tag: tag)
    final class Opening {
        private let context: UnsafeMutablePointer<EVP_CIPHER_CTX>

        fileprivate init?(template: UnsafePointer<EVP_CIPHER_CTX>, nonce: UnsafeRawBufferPointer,
                          associatedData: UnsafeRawBufferPointer) {
            precondition(nonce.count == AESGCMKey.nonceSize)
            guard let context = CCryptoBoringSSL_EVP_CIPHER_CTX_new() else { return nil }
            self.context = context
            var written: Int32 = 0
            guard CCryptoBoringSSL_EVP_CIPHER_CTX_copy(context, template) == 1,
                  CCryptoBoringSSL_EVP_DecryptInit_ex(context, nil, nil, nil, nonce.bytes) == 1,
                  associatedData.count <= Int(Int32.max),
                  CCryptoBoringSSL_EVP_DecryptUpdate(context, nil, &written, associatedData.bytes,
                                                     Int32(associatedData.count)) == 1
            else { return nil }
        }

        deinit { CCryptoBoringSSL_EVP_CIPHER_CTX_free(context) }

        /// Decrypts the next piece of ciphertext into `plain` (exactly as many bytes, at another
        /// place or at the same one: in place. BoringSSL's header documents in-place use for the
        /// AEAD open only; this goes through the same `CRYPTO_gcm128_decrypt`, and
        /// OpenWhileDecodingTests pins it); false if BoringSSL fails.
        func update(_ ciphertext: UnsafeRawBufferPointer, into plain: UnsafeMutableRawBufferPointer) -> Bool {
            precondition(plain.count == ciphertext.count && ciphertext.count <= Int(Int32.max))
            var written: Int32 = 0
            return CCryptoBoringSSL_EVP_DecryptUpdate(context, plain.bytes, &written, ciphertext.bytes,
                                                      Int32(ciphertext.count)) == 1
                && Int(written) == ciphertext.count
        }

        /// Whether `tag` (16 bytes) is the tag of the associated data and every piece given.
        func finish(tag: UnsafeRawBufferPointer) -> Bool {
            precondition(tag.count == AESGCMKey.tagSize)
            var written: Int32 = 0
            var none: UInt8 = 0
            return CCryptoBoringSSL_EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_AEAD_SET_TAG, Int32(tag.count),
                                                        UnsafeMutableRawPointer(mutating: tag.baseAddress)) == 1
                && CCryptoBoringSSL_EVP_DecryptFinal_ex(context, &none, &written) == 1
        }
    }

    /// Fills `buffer` from BoringSSL's CSPRNG (one `getrandom` for the whole buffer).
    static func fillRandom(_ buffer: UnsafeMutableRawBufferPointer) {
        precondition(CCryptoBoringSSL_RAND_bytes(buffer.bytes, buffer.count) == 1, "RAND_bytes failed")
    }
    #else
    private let key: SymmetricKey

    init(_ key: SymmetricKey) {
        precondition(key.bitCount == 256, "AES-256-GCM needs a 256-bit key")
        self.key = key
    }

    /// Seals `plaintext` into `output` (exactly `plaintext.count + tagSize` bytes).
    func seal(_ plaintext: UnsafeRawBufferPointer, nonce: UnsafeRawBufferPointer,
              associatedData: UnsafeRawBufferPointer, into output: UnsafeMutableRawBufferPointer) {
        precondition(output.count == plaintext.count + Self.tagSize && nonce.count == Self.nonceSize)
        let box = try! AES.GCM.seal(Data(plaintext), using: key, nonce: AES.GCM.Nonce(data: nonce),
                                    authenticating: Data(associatedData))
        output.copyBytes(from: box.ciphertext + box.tag)
    }

    /// Opens `ciphertextAndTag` into `output` (exactly `ciphertextAndTag.count - tagSize`
    /// bytes); false when the tag does not verify.
    func open(_ ciphertextAndTag: UnsafeRawBufferPointer, nonce: UnsafeRawBufferPointer,
              associatedData: UnsafeRawBufferPointer, into output: UnsafeMutableRawBufferPointer) -> Bool {
        precondition(output.count + Self.tagSize == ciphertextAndTag.count && nonce.count == Self.nonceSize)
        guard let box = try? AES.GCM.SealedBox(combined: Data(nonce) + Data(ciphertextAndTag)),
              let plain = try? AES.GCM.open(box, using: key, authenticating: Data(associatedData)) else { return false }
        output.copyBytes(from: plain)
        return true
    }

    /// One payload opened a piece at a time: CryptoKit has no such API.
    final class Opening {
        func update(_ ciphertext: UnsafeRawBufferPointer, into plain: UnsafeMutableRawBufferPointer) -> Bool { false }
        func finish(tag: UnsafeRawBufferPointer) -> Bool { false }
    }

    /// `nil`: CryptoKit opens only whole payloads (callers then use `open`).
    func beginOpening(nonce: UnsafeRawBufferPointer, associatedData: UnsafeRawBufferPointer) -> Opening? { nil }

    /// Fills `buffer` from the system's CSPRNG.
    static func fillRandom(_ buffer: UnsafeMutableRawBufferPointer) {
        guard let base = buffer.baseAddress else { return }
        arc4random_buf(base, buffer.count)
    }
    #endif
}

#if canImport(CCryptoBoringSSL)
private extension UnsafeRawBufferPointer {
    /// The bytes as BoringSSL takes them; never null (an empty buffer may have no address,
    /// and BoringSSL reads nothing from a zero-length one).
    var bytes: UnsafePointer<UInt8> {
        UnsafePointer(baseAddress?.assumingMemoryBound(to: UInt8.self)) ?? UnsafePointer(emptyBytes)
    }
}

private extension UnsafeMutableRawBufferPointer {
    var bytes: UnsafeMutablePointer<UInt8> {
        baseAddress?.assumingMemoryBound(to: UInt8.self) ?? emptyBytes
    }
}

/// A valid address for zero-length buffers.
nonisolated(unsafe) private let emptyBytes = UnsafeMutablePointer<UInt8>.allocate(capacity: 1)
#endif
