import CLZ4
import Testing
@testable import BlobCache

/// A large sealed LZ4 payload is opened in pieces while its blocks are decoded
/// (`OpenWhileDecoding`): it must give exactly the bytes opening it whole gives, and
/// never a byte of a payload whose tag does not verify.
@Suite("Opening while decoding")
struct OpenWhileDecodingTests {
    private let cipher = try! CacheCipher(.aesGCM(key: testKey))

    /// Large values of several shapes: around the large-value threshold, not a whole number of
    /// blocks, mostly text, half text and half noise (blocks stored raw in the frame), and
    /// exactly four blocks.
    private static let values: [[UInt8]] = [
        Samples.compressible(Parallel.threshold, seed: 1),
        Samples.compressible(Parallel.threshold + 1, seed: 2),
        Samples.compressible((1 << 20) - 7, seed: 3),
        Samples.compressible(300_000, seed: 4) + Samples.random(500_000, seed: 4) + Samples.compressible(333_333, seed: 5),
        Samples.compressible(1 << 20, seed: 6),
    ]

    private func context(_ value: [UInt8], rawLength: Int? = nil) -> CacheCipher.Context {
        SealedFrames.context(value, rawLength: rawLength)
    }

    private func sealed(_ frame: [UInt8], _ context: CacheCipher.Context) -> [UInt8] {
        SealedFrames.seal(frame, context, cipher)
    }

    private func frame(_ value: [UInt8]) -> [UInt8] { SealedFrames.cacheFrame(value) }

    /// Decodes `sealed` from borrowed bytes, or `inPlace` from a copy the read owns (the
    /// plaintext overwriting the ciphertext, as a loose blob's read does).
    private func decode(_ sealed: [UInt8], _ context: CacheCipher.Context, rawCount: Int,
                        workers: Int? = nil, inPlace: Bool = false) -> OpenWhileDecoding.Outcome? {
        guard inPlace else {
            return sealed.withUnsafeBytes {
                OpenWhileDecoding.decode(.borrowed($0), cipher: cipher, context: context, rawCount: rawCount, workers: workers)
            }
        }
        var own = sealed
        return own.withUnsafeMutableBytes {
            OpenWhileDecoding.decode(.owned($0), cipher: cipher, context: context, rawCount: rawCount, workers: workers)
        }
    }

    @Test("large values open and decode to exactly their bytes, block by block, with 1, 2 or 8 threads, in place or not",
          arguments: 0..<values.count, [1, 2, 8])
    func roundTrips(which: Int, workers: Int) throws {
        let value = Self.values[which]
        for inPlace in [false, true] {
            let outcome = try #require(decode(sealed(frame(value), context(value)), context(value), rawCount: value.count,
                                              workers: workers, inPlace: inPlace))
            guard case .decoded(let bytes, let pipelined) = outcome else {
                Issue.record("\(value.count) bytes, in place \(inPlace): \(outcome)")
                continue
            }
            #expect(pipelined, "the cache's own frames are decoded as they open")
            #expect(bytes == value, "in place: \(inPlace)")
        }
    }

    @Test("a flipped byte anywhere in the seal, or another blob's context, gives no bytes: the tag does not verify")
    func damageIsDetected() throws {
        let value = Self.values[2]
        let good = sealed(frame(value), context(value))
        for position in [0, 11, 12, 13, 12 + 40_000, good.count / 2, good.count - 17, good.count - 16, good.count - 1] {
            var damaged = good
            damaged[position] ^= 0x20
            for inPlace in [false, true] {
                let outcome = try #require(decode(damaged, context(value), rawCount: value.count, inPlace: inPlace), "byte \(position)")
                guard case .tagMismatch = outcome else {
                    Issue.record("byte \(position) of \(good.count), in place \(inPlace): \(outcome)")
                    continue
                }
            }
        }
        let other = Samples.compressible(value.count, seed: 99)
        for inPlace in [false, true] {
            let outcome = try #require(decode(good, context(other), rawCount: value.count, inPlace: inPlace))
            guard case .tagMismatch = outcome else { Issue.record("another blob's context, in place \(inPlace): \(outcome)"); continue }
        }
    }

    @Test("an authentic frame that does not decode to the sealed length is undecodable, not a tag failure",
          arguments: [2, 4])
    func authenticButWrongLength(which: Int) throws {
        let value = Self.values[which]
        // Sealed (and so opened) as if the value were a byte longer or shorter than its frame
        // holds. Four whole blocks and one byte more: every block decodes, and only the count
        // of blocks tells that the last byte was never written.
        for claimedLength in [value.count + 1, value.count - 1] {
            let claimed = context(value, rawLength: claimedLength)
            for inPlace in [false, true] {
                let outcome = try #require(decode(sealed(frame(value), claimed), claimed, rawCount: claimedLength, inPlace: inPlace))
                guard case .undecodable = outcome else {
                    Issue.record("\(claimedLength) of \(value.count), in place \(inPlace): \(outcome)")
                    continue
                }
            }
        }
    }

    @Test("a frame of linked blocks, or with block checksums, is not indexed: it is decoded whole once authentic",
          arguments: [false, true])
    func otherFramesDecodeWhole(blockChecksums: Bool) throws {
        let value = Self.values[2]
        let frame = SealedFrames.lz4fFrame(value) {
            $0.frameInfo.blockMode = LZ4F_blockLinked
            $0.frameInfo.blockSizeID = LZ4F_max64KB
            if blockChecksums { $0.frameInfo.blockChecksumFlag = LZ4F_blockChecksumEnabled }
        }
        for inPlace in [false, true] {
            let outcome = try #require(decode(sealed(frame, context(value)), context(value), rawCount: value.count, inPlace: inPlace))
            guard case .decoded(let bytes, let pipelined) = outcome else { Issue.record("in place \(inPlace): \(outcome)"); continue }
            #expect(!pipelined, "a frame of linked blocks is decoded whole")
            #expect(bytes == value, "in place: \(inPlace)")
        }
    }

    @Test("the frame index grows with the bytes that have arrived and ends as the whole frame's")
    func indexGrowsWithArrivedBytes() {
        let bytes = frame(Self.values[3])
        var whole = [blobcache_lz4_block](repeating: blobcache_lz4_block(), count: 64)
        var blockMax = 0
        let count = blobcache_lz4_frame_index(bytes, bytes.count, &whole, whole.count, &blockMax)
        #expect(count > 3)
        var state = blobcache_lz4_index_state()
        var blocks = [blobcache_lz4_block](repeating: blobcache_lz4_block(), count: 64)
        var result: Int32 = 0
        for available in 0...bytes.count {
            result = blobcache_lz4_frame_index_step(bytes, available, bytes.count, &state, &blocks, blocks.count)
            if result != 0 { break }
            // Only blocks wholly within the bytes that have arrived.
            if state.count > 0, blocks[state.count - 1].offset + blocks[state.count - 1].size > available {
                Issue.record("block \(state.count - 1) indexed with \(available) bytes arrived")
            }
        }
        #expect(result == 1)
        #expect(state.count == count && state.blockMax == blockMax)
        for index in 0..<count {
            #expect(blocks[index].offset == whole[index].offset && blocks[index].size == whole[index].size
                    && blocks[index].uncompressed == whole[index].uncompressed)
        }
        // Cut short by a byte, the frame is invalid.
        var cut = blobcache_lz4_index_state()
        #expect(blobcache_lz4_frame_index_step(bytes, bytes.count - 1, bytes.count - 1, &cut, &blocks, blocks.count) == -1)
    }
}
