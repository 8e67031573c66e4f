import Crypto
import Foundation
import Testing
@testable import BlobCache

/// The sealing layer under an encrypted cache: its own AES-GCM path (a kept BoringSSL context,
/// pooled nonces, a pre-keyed HMAC) must produce and accept exactly what swift-crypto's
/// one-call API does, under the keys and associated data docs/FORMAT.md ("Encryption") gives,
/// so caches sealed before it still open and nothing about the format moved.
@Suite("Cipher")
struct CipherTests {
    /// A working key derived as FORMAT.md says: HKDF-SHA256 of the master key, info "BlobCache <label>".
    private func derived(_ label: String) -> SymmetricKey {
        HKDF<SHA256>.deriveKey(inputKeyMaterial: testKey, info: Array("BlobCache \(label)".utf8), outputByteCount: 32)
    }

    private let payloads: [[UInt8]] = [[], [7], Array("a journal record payload".utf8), Samples.random(70_000, seed: 9)]

    @Test("a kept AES-GCM key seals what swift-crypto opens, and opens what it seals")
    func keptKeyInteroperates() throws {
        let key = SymmetricKey(size: .bits256)
        let kept = AESGCMKey(key)
        let associated = Array("bound to this".utf8)
        for plain in payloads {
            let nonce = AES.GCM.Nonce()
            var sealed = [UInt8](repeating: 0, count: plain.count + AESGCMKey.tagSize)
            nonce.withUnsafeBytes { nonceBytes in
                plain.withUnsafeBytes { p in associated.withUnsafeBytes { a in sealed.withUnsafeMutableBytes {
                    kept.seal(p, nonce: nonceBytes, associatedData: a, into: $0)
                } } }
            }
            let box = try AES.GCM.SealedBox(nonce: nonce, ciphertext: sealed.dropLast(16), tag: sealed.suffix(16))
            #expect(Array(try AES.GCM.open(box, using: key, authenticating: associated)) == plain)

            let theirs = try AES.GCM.seal(plain, using: key, nonce: nonce, authenticating: associated)
            #expect(Array(theirs.ciphertext + theirs.tag) == sealed)
            var opened = [UInt8](repeating: 0, count: plain.count)
            let ciphertextAndTag = Array(theirs.ciphertext + theirs.tag)
            let ok = nonce.withUnsafeBytes { n in ciphertextAndTag.withUnsafeBytes { c in associated.withUnsafeBytes { a in
                opened.withUnsafeMutableBytes { kept.open(c, nonce: n, associatedData: a, into: $0) } } } }
            #expect(ok && opened == plain)

            // A flipped byte anywhere, or other associated data, does not open.
            for position in [0, ciphertextAndTag.count / 2, ciphertextAndTag.count - 1] {
                var damaged = ciphertextAndTag
                damaged[position] ^= 0x01
                let opens = nonce.withUnsafeBytes { n in damaged.withUnsafeBytes { c in associated.withUnsafeBytes { a in
                    opened.withUnsafeMutableBytes { kept.open(c, nonce: n, associatedData: a, into: $0) } } } }
                #expect(!opens)
            }
            let otherAssociated = Array("bound to that".utf8)
            let opensElsewhere = nonce.withUnsafeBytes { n in ciphertextAndTag.withUnsafeBytes { c in otherAssociated.withUnsafeBytes { a in
                opened.withUnsafeMutableBytes { kept.open(c, nonce: n, associatedData: a, into: $0) } } } }
            #expect(!opensElsewhere)
        }
    }

    @Test("opening in place gives what opening into another buffer gives, and nothing for a flipped byte or another context")
    func openingInPlace() throws {
        let cipher = try CacheCipher(.aesGCM(key: testKey))
        let context = CacheCipher.Context.blob(id: BlobID(hashing: [1]), codec: .lz4, rawLength: 123)
        for plain in payloads + [Samples.random(300_000, seed: 10)] {
            let sealed = plain.withUnsafeBytes { cipher.seal($0, context: context) }
            var own = sealed
            let opened = own.withUnsafeMutableBytes { cipher.openInPlace($0, context: context).map(Array.init) }
            #expect(opened == plain)
            #expect(sealed.withUnsafeBytes { cipher.open($0, context: context) } == plain)
            for position in [0, sealed.count / 2, sealed.count - 1] {
                var damaged = sealed
                damaged[position] ^= 0x01
                #expect(damaged.withUnsafeMutableBytes { cipher.openInPlace($0, context: context) } == nil, "byte \(position)")
            }
            var elsewhere = sealed
            let other = CacheCipher.Context.blob(id: BlobID(hashing: [2]), codec: .lz4, rawLength: 123)
            #expect(elsewhere.withUnsafeMutableBytes { cipher.openInPlace($0, context: other) } == nil)
        }
    }

    @Test("the cache's seals are AES-GCM under the derived keys, with FORMAT.md's associated data")
    func sealsMatchTheDocumentedFormat() throws {
        let cipher = try CacheCipher(.aesGCM(key: testKey))
        let id = BlobID(hashing: Array("some value".utf8))
        var blobContext = BinaryWriter(capacity: 29)
        blobContext.append(bytes: Array("blob".utf8))
        blobContext.append(digestOf: id)
        blobContext.append(CodecTag.lz4.rawValue)
        blobContext.append(UInt64(123_456))
        let cases: [(CacheCipher.Context, SymmetricKey, [UInt8])] = [
            (.blob(id: id, codec: .lz4, rawLength: 123_456), derived("value key"), blobContext.bytes),
            (.record(kind: 3), derived("index key"), Array("journal record".utf8) + [3]),
            (.snapshot, derived("index key"), Array("index snapshot".utf8)),
        ]
        for (context, key, associated) in cases {
            for plain in payloads {
                // Sealed by the cache, opened by swift-crypto with the documented key and data.
                let sealed = plain.withUnsafeBytes { cipher.seal($0, context: context, headroom: 5) }
                #expect(sealed.prefix(5) == [0, 0, 0, 0, 0])
                let box = try AES.GCM.SealedBox(combined: sealed.dropFirst(5))
                #expect(Array(try AES.GCM.open(box, using: key, authenticating: associated)) == plain)
                // Sealed by swift-crypto so (as before this layer), opened by the cache, both ways.
                let theirs = try AES.GCM.seal(plain, using: key, authenticating: associated).combined!
                let viaArray = theirs.withUnsafeBytes { cipher.open($0, context: context) }
                let viaBody = theirs.withUnsafeBytes { cipher.open($0, context: context) { Array($0) } }
                #expect(viaArray == plain && viaBody == plain)
            }
        }
        // A seal moved to another context does not open there.
        let record = Array("payload".utf8).withUnsafeBytes { cipher.seal($0, context: .record(kind: 3)) }
        #expect(record.withUnsafeBytes { cipher.open($0, context: .record(kind: 4)) } == nil)
        #expect(record.withUnsafeBytes { cipher.open($0, context: .snapshot) } == nil)
        #expect([UInt8](repeating: 0, count: 27).withUnsafeBytes { cipher.open($0, context: .snapshot) } == nil)
    }

    @Test("blob ids are HMAC-MD5 under the derived id key, call after call")
    func keyedIDsMatchHMAC() throws {
        let cipher = try CacheCipher(.aesGCM(key: testKey))
        let idKey = derived("blob id key")
        for value in payloads + payloads {
            let expected = BlobID(digestBytes: Array(HMAC<Insecure.MD5>.authenticationCode(for: value, using: idKey)))!
            #expect(value.withUnsafeBytes { cipher.blobID(hashing: $0) } == expected)
        }
    }

    #if os(Linux)
    @Test("on Linux, seals use a kept BoringSSL context (swift-crypto's C layer is importable)")
    func keptContextOnLinux() {
        #expect(AESGCMKey.keepsContext)
    }
    #endif

    @Test("nonces are never handed out twice, across refills of the pool")
    func noncesAreUnique() {
        let nonces = NonceSource()
        var seen = Set<[UInt8]>()
        for _ in 0..<5_000 {   // about 15 refills of the 4 KiB pool
            var nonce = [UInt8](repeating: 0, count: AESGCMKey.nonceSize)
            nonce.withUnsafeMutableBytes { nonces.next(into: $0) }
            #expect(seen.insert(nonce).inserted)
        }
    }
}
