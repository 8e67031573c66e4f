import CLZ4
import Testing
@testable import BlobCache

@Suite("Codecs")
struct CodecTests {
    static let codecs: [Codec] = [.none, .lz4, .zlib(level: 1), .zlib(level: 6), .zlib(level: 9)]
    static let sizes = [0, 1, 7, 4096, 65_537, 1 << 20, 8 << 20]

    @Test("every codec round-trips empty, 1-byte, random and compressible data up to 8 MiB",
          arguments: codecs)
    func roundTrip(codec: Codec) throws {
        for size in Self.sizes {
            for value in [Samples.random(size, seed: UInt64(size)), Samples.compressible(size, seed: UInt64(size))] {
                let encoded = value.withUnsafeBytes { Compression.encode($0, codec: codec, headroom: 8) }
                #expect(encoded.buffer.prefix(8).allSatisfy { $0 == 0 })
                let payload = Array(encoded.buffer.dropFirst(8))
                let decoded = payload.withUnsafeBytes { Compression.decode($0, tag: encoded.tag, rawCount: size) }
                #expect(decoded == value, "codec \(codec), \(size) bytes")
                #expect(payload.count <= max(size, 0), "never larger than raw")
            }
        }
    }

    @Test("compressible data is stored compressed; incompressible and tiny data fall back to raw",
          arguments: [Codec.lz4, .zlib])
    func rawFallback(codec: Codec) {
        let text = Samples.compressible(64 * 1024)
        let packed = text.withUnsafeBytes { Compression.encode($0, codec: codec, headroom: 0) }
        #expect(packed.tag == codec.tag)
        #expect(packed.payloadCount < text.count / 2)

        for value in [Samples.random(64 * 1024), [UInt8(42)], []] {
            let raw = value.withUnsafeBytes { Compression.encode($0, codec: codec, headroom: 0) }
            #expect(raw.tag == .none)
            #expect(raw.buffer == value)
        }
    }

    @Test("damaged or truncated payloads are errors, never wrong bytes", arguments: [Codec.lz4, .zlib])
    func damagedPayload(codec: Codec) {
        let value = Samples.compressible(3000)
        let encoded = value.withUnsafeBytes { Compression.encode($0, codec: codec, headroom: 0) }
        let payload = encoded.buffer
        for cut in stride(from: 0, to: payload.count, by: 7) {
            let decoded = Array(payload.prefix(cut)).withUnsafeBytes {
                Compression.decode($0, tag: encoded.tag, rawCount: value.count)
            }
            #expect(decoded == nil, "truncated to \(cut)")
        }
        let wrongLength = payload.withUnsafeBytes { Compression.decode($0, tag: encoded.tag, rawCount: value.count + 1) }
        #expect(wrongLength == nil)
        for position in stride(from: 0, to: payload.count, by: 3) {
            var damaged = payload
            damaged[position] ^= 0x5A
            let decoded = damaged.withUnsafeBytes { Compression.decode($0, tag: encoded.tag, rawCount: value.count) }
            // A codec alone cannot always notice a flipped literal (the container CRC does);
            // what it must never do is crash or produce a wrong-length result.
            if let decoded { #expect(decoded.count == value.count) }
        }
    }

    @Test("small LZ4 frames decode to exactly their bytes, the cache's own (one block, decoded straight) and any other kind (LZ4F)",
          arguments: ["cache's own", "one raw block", "linked", "block checksums", "content checksum", "64 KB blocks"])
    func smallFramesOfEveryKind(kind: String) throws {
        let value = kind == "one raw block" ? Samples.random(3000, seed: 1) : Samples.compressible(150_000, seed: 2)
        var frame = SealedFrames.lz4fFrame(value) { preferences in
            switch kind {
            case "one raw block", "64 KB blocks": preferences.frameInfo.blockSizeID = LZ4F_max64KB
            case "linked": preferences.frameInfo.blockMode = LZ4F_blockLinked
            case "block checksums": preferences.frameInfo.blockChecksumFlag = LZ4F_blockChecksumEnabled
            case "content checksum": preferences.frameInfo.contentChecksumFlag = LZ4F_contentChecksumEnabled
            default: break
            }
        }
        if kind == "cache's own" { frame = value.withUnsafeBytes { Compression.encode($0, codec: .lz4, headroom: 0) }.buffer }
        let decoded = frame.withUnsafeBytes { Compression.decode($0, tag: .lz4, rawCount: value.count) }
        #expect(decoded.map { $0 == value } == true, "\(kind): \(decoded?.count ?? -1) bytes decoded")
        for wrong in [value.count - 1, value.count + 1] {
            #expect(frame.withUnsafeBytes { Compression.decode($0, tag: .lz4, rawCount: wrong) } == nil, "\(kind): \(wrong)")
        }
    }

    @Test("a small frame whose recorded content size disagrees with the value is not decoded")
    func contentSizeDisagrees() throws {
        let value = Samples.compressible(4096, seed: 5)
        var frame = value.withUnsafeBytes { Compression.encode($0, codec: .lz4, headroom: 0) }.buffer
        try #require(frame[4] & 0x08 != 0, "the cache records the content size")
        frame[6] ^= 0x01
        #expect(frame.withUnsafeBytes { Compression.decode($0, tag: .lz4, rawCount: value.count) } == nil)
    }

    @Test("a frame that failed to decode does not spoil the decoder for the next: a valid frame of several blocks decodes after it")
    func decoderRecoversFromDamage() {
        // LZ4F's context, once a frame fails mid-block, fails every later frame of several
        // blocks even after LZ4F_resetDecompressionContext; a pooled one must not be reused.
        let value = Samples.compressible(150_000, seed: 3)
        let several = SealedFrames.lz4fFrame(value) { $0.frameInfo.blockSizeID = LZ4F_max64KB }
        let small = Samples.compressible(3000, seed: 4)
        let smallFrame = small.withUnsafeBytes { Compression.encode($0, codec: .lz4, headroom: 0) }.buffer
        for cut in [20, 40, smallFrame.count - 1] {
            let truncated = Array(smallFrame.prefix(cut)).withUnsafeBytes { Compression.decode($0, tag: .lz4, rawCount: small.count) }
            #expect(truncated == nil)
            let decoded = several.withUnsafeBytes { Compression.decode($0, tag: .lz4, rawCount: value.count) }
            #expect(decoded.map { $0 == value } == true, "after a frame cut to \(cut) bytes: \(decoded?.count ?? -1) bytes decoded")
        }
    }

    @Test("a large LZ4 payload (its blocks decoded on every core) rejects truncation and damage to its framing")
    func damagedLargeLZ4() {
        let value = Samples.compressible(1 << 20)
        let encoded = value.withUnsafeBytes { Compression.encode($0, codec: .lz4, headroom: 0) }
        let payload = encoded.buffer
        #expect(encoded.tag == .lz4)
        #expect(same(payload.withUnsafeBytes { Compression.decode($0, tag: .lz4, rawCount: value.count) }, value))
        #expect(payload.withUnsafeBytes { LZ4Frame($0, rawCount: value.count) }?.blocks.count == 4, "256 KiB blocks")
        for cut in [0, 7, 11, 100, payload.count / 2, payload.count - 5, payload.count - 1] {
            let decoded = Array(payload.prefix(cut)).withUnsafeBytes { Compression.decode($0, tag: .lz4, rawCount: value.count) }
            #expect(decoded == nil, "truncated to \(cut)")
        }
        #expect(payload.withUnsafeBytes { Compression.decode($0, tag: .lz4, rawCount: value.count - 1) } == nil)
        // The first block's size field sits after the 15-byte header; damage to any header or size
        // byte must fail, never produce a wrong-length result.
        for position in 0..<19 {
            var damaged = payload
            damaged[position] ^= 0x40
            let decoded = damaged.withUnsafeBytes { Compression.decode($0, tag: .lz4, rawCount: value.count) }
            if let decoded { #expect(decoded.count == value.count) }
        }
    }

    @Test("a large LZ4 value compressed on every core is the frame LZ4F writes, byte for byte",
          arguments: [256 * 1024, (1 << 20) + 17, 3 << 20])
    func parallelFrameMatchesLZ4F(size: Int) {
        // Compressible and random stretches, so that some blocks are stored raw.
        let value = Samples.compressible(size / 2) + Samples.random(size / 4) + Samples.compressible(size - size / 2 - size / 4, seed: 9)
        var hashed = false
        let parallel = value.withUnsafeBytes { Compression.encode($0, codec: .lz4, headroom: 3, first: { hashed = true }) }
        let sequential = value.withUnsafeBytes { Compression.compress($0, codec: .lz4, headroom: 3) }
        #expect(hashed)
        #expect(parallel.tag == .lz4)
        // Compared into Bools first, so that a failure does not print megabytes.
        let identical = parallel.buffer == sequential?.buffer
        #expect(identical, "the frame differs from LZ4F's")
        let payload = Array(parallel.buffer.dropFirst(3))
        let roundTrips = payload.withUnsafeBytes { Compression.decodeSequentially($0, tag: .lz4, rawCount: size) } == value
        #expect(roundTrips, "LZ4F does not decode the frame back to the value")
    }

    @Test("codec names parse")
    func names() {
        #expect(Codec(name: "lz4") == .lz4)
        #expect(Codec(name: "zlib") == .zlib(level: 6))
        #expect(Codec(name: "zlib-9") == .zlib(level: 9))
        #expect(Codec(name: "none") == Codec.none)
        #expect(Codec(name: "zstd") == nil)
        #expect(Codec(name: "zlib-0") == nil)
    }
}
