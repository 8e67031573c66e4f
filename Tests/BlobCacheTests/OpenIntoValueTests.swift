import CLZ4
import Testing
@testable import BlobCache

/// A small sealed LZ4 payload is opened into the end of its value's array and decoded in place
/// (`OpenIntoValue`): exactly the value's bytes, nothing for a seal that does not verify, and
/// any frame it does not take left to the usual path, which still decodes it.
@Suite("Opening into the value")
struct OpenIntoValueTests {
    private let cipher = try! CacheCipher(.aesGCM(key: testKey))

    private func context(_ value: [UInt8], rawLength: Int? = nil) -> CacheCipher.Context {
        SealedFrames.context(value, rawLength: rawLength)
    }

    private func sealed(_ frame: [UInt8], _ context: CacheCipher.Context) -> [UInt8] {
        SealedFrames.seal(frame, context, cipher)
    }

    private func frame(_ value: [UInt8]) -> [UInt8] { SealedFrames.cacheFrame(value) }

    private func frame(_ value: [UInt8], _ change: (inout LZ4F_preferences_t) -> Void) -> [UInt8] {
        SealedFrames.lz4fFrame(value, change)
    }

    private func decode(_ sealed: [UInt8], _ context: CacheCipher.Context, rawCount: Int) -> OpenIntoValue.Outcome? {
        sealed.withUnsafeBytes { OpenIntoValue.decode($0, cipher: cipher, context: context, rawCount: rawCount) }
    }

    /// What an encrypted cache's read of a pack record gives for this seal.
    private func read(_ sealed: [UInt8], _ context: CacheCipher.Context, id: BlobID, rawLength: Int) -> Result<[UInt8], BlobDamage> {
        sealed.withUnsafeBytes {
            SealedPayload.decode(.borrowed($0), sealed: true, cipher: cipher, id: id, codec: .lz4, rawLength: rawLength)
        }
    }

    @Test("the cache's small frames open and decode in place to exactly their bytes",
          arguments: [300, 4096, 5000, 65_536, 65_537, 200_000, Parallel.threshold - 1])
    func roundTrips(count: Int) throws {
        let value = Samples.compressible(count, seed: UInt64(count))
        let seal = sealed(frame(value), context(value))
        let outcome = try #require(decode(seal, context(value), rawCount: value.count))
        guard case .decoded(let bytes) = outcome else { Issue.record("\(count) bytes: \(outcome)"); return }
        #expect(bytes == value)
        #expect(try read(seal, context(value), id: BlobID(hashing: value), rawLength: value.count).get() == value)
    }

    @Test("a one-block frame whose block is stored raw is moved into place")
    func rawBlock() throws {
        let value = Samples.random(3000, seed: 7)
        let raw = frame(value) { $0.frameInfo.blockSizeID = LZ4F_max64KB }
        let outcome = try #require(decode(sealed(raw, context(value)), context(value), rawCount: value.count))
        guard case .decoded(let bytes) = outcome else { Issue.record("\(outcome)"); return }
        #expect(bytes == value)
    }

    @Test("a flipped byte anywhere in the seal, or another blob's context, gives no bytes")
    func damageIsDetected() throws {
        let value = Samples.compressible(4096, seed: 8)
        let good = sealed(frame(value), context(value))
        for position in [0, 11, 12, 13, good.count / 2, good.count - 17, good.count - 16, good.count - 1] {
            var damaged = good
            damaged[position] ^= 0x20
            let outcome = try #require(decode(damaged, context(value), rawCount: value.count), "byte \(position)")
            guard case .tagMismatch = outcome else { Issue.record("byte \(position): \(outcome)"); continue }
            #expect(throws: (any Error).self) { try read(damaged, context(value), id: BlobID(hashing: value), rawLength: value.count).get() }
        }
        let other = Samples.compressible(4096, seed: 9)
        let outcome = try #require(decode(good, context(other), rawCount: value.count))
        guard case .tagMismatch = outcome else { Issue.record("another blob's context: \(outcome)"); return }
    }

    @Test("frames of several blocks, linked blocks or checksums are left to the usual path, which decodes them",
          arguments: ["several blocks", "linked", "block checksums", "content checksum"])
    func otherFramesFallBack(kind: String) throws {
        // One block for the checksum kinds, so that each is refused for what it is named after
        // (LZ4F writes a frame of one block as independent, so linked blocks need several).
        let value = Samples.compressible(kind == "several blocks" || kind == "linked" ? 150_000 : 4096, seed: 10)
        let other = frame(value) {
            $0.frameInfo.blockSizeID = LZ4F_max64KB
            switch kind {
            case "linked": $0.frameInfo.blockMode = LZ4F_blockLinked
            case "block checksums": $0.frameInfo.blockChecksumFlag = LZ4F_blockChecksumEnabled
            case "content checksum": $0.frameInfo.contentChecksumFlag = LZ4F_contentChecksumEnabled
            default: break
            }
        }
        let seal = sealed(other, context(value))
        #expect(decode(seal, context(value), rawCount: value.count) == nil)
        #expect(try read(seal, context(value), id: BlobID(hashing: value), rawLength: value.count).get() == value)
    }

    @Test("an authentic frame whose recorded content size disagrees with the value gives no bytes")
    func contentSizeDisagrees() throws {
        let value = Samples.compressible(4096, seed: 13)
        var bad = frame(value)
        try #require(bad[4] & 0x08 != 0, "the cache records the content size")
        bad[6] ^= 0x01   // 4096 becomes 4097 (LZ4F also sees the header checksum no longer match)
        let seal = sealed(bad, context(value))
        #expect(decode(seal, context(value), rawCount: value.count) == nil)
        guard case .failure(.decompression) = read(seal, context(value), id: BlobID(hashing: value), rawLength: value.count) else {
            Issue.record("a frame recording 4097 bytes was decoded as 4096")
            return
        }
    }

    @Test("an authentic frame that does not decode to the sealed length gives no bytes, whichever path says so",
          arguments: [4096, 50_000])
    func authenticButWrongLength(count: Int) throws {
        let value = Samples.compressible(count, seed: 11)
        for claimedLength in [value.count + 1, value.count - 1] {
            let claimed = context(value, rawLength: claimedLength)
            let seal = sealed(frame(value), claimed)
            #expect(decode(seal, claimed, rawCount: claimedLength) == nil, "\(claimedLength)")
            guard case .failure(.decompression) = read(seal, claimed, id: BlobID(hashing: value), rawLength: claimedLength) else {
                Issue.record("\(claimedLength) of \(count): not a decompression failure")
                continue
            }
        }
    }

    @Test("a length no payload of this size can decode to is refused before anything is allocated or opened")
    func impossibleLength() {
        let value = Samples.compressible(4096, seed: 12)
        let seal = sealed(frame(value), context(value))
        #expect(decode(seal, context(value), rawCount: 1 << 40) == nil)
    }
}

extension OpenIntoValue.Outcome: Equatable {
    public static func == (left: Self, right: Self) -> Bool {
        switch (left, right) {
        case (.decoded(let a), .decoded(let b)): a == b
        case (.tagMismatch, .tagMismatch): true
        default: false
        }
    }
}
