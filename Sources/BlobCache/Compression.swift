import CLZ4
import CZlib
import Synchronization

/// Compresses and decompresses blob payloads with the native libraries, reusing their contexts.
///
/// Encoding writes the payload after `headroom` bytes the caller fills with its header, so a
/// blob goes to disk from one buffer. Decoding checks that the payload expands to exactly the
/// recorded length and is used up; anything else is `nil`, never wrong bytes.
enum Compression {
    private static let lz4Compressors = ContextPool(
        make: {
            var context: OpaquePointer?
            guard LZ4F_isError(LZ4F_createCompressionContext(&context, UInt32(LZ4F_VERSION))) == 0 else { return nil }
            return context.map { UnsafeMutableRawPointer($0) }
        },
        destroy: { LZ4F_freeCompressionContext(OpaquePointer($0)) })

    private static let lz4Decompressors = ContextPool(
        make: {
            var context: OpaquePointer?
            guard LZ4F_isError(LZ4F_createDecompressionContext(&context, UInt32(LZ4F_VERSION))) == 0 else { return nil }
            return context.map { UnsafeMutableRawPointer($0) }
        },
        destroy: { LZ4F_freeDecompressionContext(OpaquePointer($0)) })

    /// One pool of deflate streams per level (a stream's level is fixed at creation).
    private static let deflaters: [ContextPool] = (0...9).map { level in
        ContextPool(
            make: { blobcache_deflate_create(Int32(level)).map { UnsafeMutableRawPointer($0) } },
            destroy: { blobcache_deflate_destroy($0.assumingMemoryBound(to: z_stream.self)) })
    }

    private static let inflaters = ContextPool(
        make: { blobcache_inflate_create().map { UnsafeMutableRawPointer($0) } },
        destroy: { blobcache_inflate_destroy($0.assumingMemoryBound(to: z_stream.self)) })

    /// The result of encoding: `headroom` zero bytes followed by the payload.
    struct Encoded {
        var buffer: [UInt8]
        let tag: CodecTag
        var payloadCount: Int { buffer.count - headroom }
        let headroom: Int
    }

    /// Encodes `raw` with `codec`, falling back to `.none` when compression does not pay.
    static func encode(_ raw: UnsafeRawBufferPointer, codec: Codec, headroom: Int) -> Encoded {
        if raw.count > 0, let encoded = compress(raw, codec: codec, headroom: headroom),
           encoded.payloadCount < raw.count {
            return encoded
        }
        var buffer = [UInt8](repeating: 0, count: headroom)
        buffer.reserveCapacity(headroom + raw.count)
        buffer.append(contentsOf: raw)
        return Encoded(buffer: buffer, tag: .none, headroom: headroom)
    }

    private static func compress(_ raw: UnsafeRawBufferPointer, codec: Codec, headroom: Int) -> Encoded? {
        switch codec {
        case .none:
            return nil
        case .lz4:
            let bound = blobcache_lz4_frame_bound(raw.count)
            return fill(headroom: headroom, capacity: bound, tag: .lz4) { out in
                lz4Compressors.withContext { context in
                    guard let context else { return 0 }
                    return blobcache_lz4_compress_frame(OpaquePointer(context), out.baseAddress, out.count,
                                                        raw.baseAddress, raw.count)
                }
            }
        case .zlib(let level):
            // Only a smaller result is worth keeping, so the output may stop short of raw's size.
            let pool = deflaters[max(1, min(9, level))]
            return fill(headroom: headroom, capacity: raw.count - 1, tag: .zlib) { out in
                pool.withContext { context in
                    guard let context else { return 0 }
                    return blobcache_deflate(context.assumingMemoryBound(to: z_stream.self), out.baseAddress,
                                             out.count, raw.baseAddress, raw.count)
                }
            }
        }
    }

    /// Allocates headroom + capacity bytes, lets `body` write the payload and report its size
    /// (0 for failure), and trims to it.
    private static func fill(headroom: Int, capacity: Int, tag: CodecTag,
                             _ body: (UnsafeMutableRawBufferPointer) -> Int) -> Encoded? {
        guard capacity > 0 else { return nil }
        var produced = 0
        let buffer = [UInt8](unsafeUninitializedCapacity: headroom + capacity) { storage, initialized in
            let raw = UnsafeMutableRawBufferPointer(storage)
            UnsafeMutableRawBufferPointer(rebasing: raw[0..<headroom]).initializeMemory(as: UInt8.self, repeating: 0)
            produced = body(UnsafeMutableRawBufferPointer(rebasing: raw[headroom...]))
            initialized = headroom + produced
        }
        guard produced > 0 else { return nil }
        return Encoded(buffer: buffer, tag: tag, headroom: headroom)
    }

    /// Decodes `payload` that `tag` compressed back to exactly `rawCount` bytes; `nil` on damage.
    /// `first` (the caller's checksum) runs before or, for a large payload, while it is decoded;
    /// a large LZ4 frame is decoded on every core, and the core that ran `first` joins in after.
    ///
    ///     let value = Compression.decode(payload, tag: .lz4, rawCount: 4096)
    static func decode(_ payload: UnsafeRawBufferPointer, tag: CodecTag, rawCount: Int,
                       first: (() -> Void)? = nil) -> [UInt8]? {
        if tag == .lz4, rawCount >= Parallel.threshold, let frame = LZ4Frame(payload, rawCount: rawCount) {
            return decodeInto(rawCount) { frame.decodeOnEveryCore(into: $0, first: first) }
        }
        guard let first, payload.count >= Parallel.threshold else {
            first?()
            return decodeSequentially(payload, tag: tag, rawCount: rawCount)
        }
        var value: [UInt8]?
        Parallel.run([first, { value = decodeSequentially(payload, tag: tag, rawCount: rawCount) }])
        return value
    }

    private static func decodeSequentially(_ payload: UnsafeRawBufferPointer, tag: CodecTag, rawCount: Int) -> [UInt8]? {
        switch tag {
        case .none:
            return payload.count == rawCount ? Array(payload) : nil
        case .lz4:
            return decodeInto(rawCount) { out in
                lz4Decompressors.withContext { context in
                    guard let context else { return false }
                    return blobcache_lz4_decompress_frame(OpaquePointer(context), out.baseAddress, out.count,
                                                          payload.baseAddress, payload.count) == 0
                }
            }
        case .zlib:
            return decodeInto(rawCount) { out in
                inflaters.withContext { context in
                    guard let context else { return false }
                    return blobcache_inflate(context.assumingMemoryBound(to: z_stream.self), out.baseAddress,
                                             out.count, payload.baseAddress, payload.count) == 0
                }
            }
        }
    }

    private static func decodeInto(_ rawCount: Int, _ body: (UnsafeMutableRawBufferPointer) -> Bool) -> [UInt8]? {
        guard rawCount >= 0 else { return nil }
        var ok = false
        let bytes = [UInt8](unsafeUninitializedCapacity: rawCount) { storage, initialized in
            ok = body(UnsafeMutableRawBufferPointer(storage))
            initialized = ok ? rawCount : 0
        }
        return ok ? bytes : nil
    }
}

/// The blocks of an LZ4 frame with independent blocks, indexed so that they can be decoded on
/// several cores at once (each block fills its own slice of the output).
struct LZ4Frame {
    let payload: UnsafeRawBufferPointer
    let blocks: [blobcache_lz4_block]
    let blockMax: Int
    let rawCount: Int

    /// Indexes `payload`; `nil` when it is not such a frame or its blocks do not cover exactly
    /// `rawCount` bytes (the sequential decoder then has the last word).
    init?(_ payload: UnsafeRawBufferPointer, rawCount: Int) {
        var blocks = [blobcache_lz4_block](repeating: blobcache_lz4_block(), count: rawCount / (64 << 10) + 2)
        var blockMax = 0
        let count = blobcache_lz4_frame_index(payload.baseAddress, payload.count, &blocks, blocks.count, &blockMax)
        guard count > 0, blockMax > 0, count == (rawCount + blockMax - 1) / blockMax else { return nil }
        self.payload = payload
        self.blocks = Array(blocks.prefix(count))
        self.blockMax = blockMax
        self.rawCount = rawCount
    }

    /// Decodes every block into `out` on every core, each core taking the next block nobody has
    /// taken, so that a core that runs `first`, or that the machine lends to something else for
    /// a while, simply decodes fewer. False on any damage.
    func decodeOnEveryCore(into out: UnsafeMutableRawBufferPointer, first: (() -> Void)?) -> Bool {
        let progress = DecodingProgress()
        let workers = max(1, min(Parallel.cores, blocks.count))
        Parallel.run((0..<workers).map { worker in
            {
                if worker == 0 { first?() }
                decodeBlocks(handedOutBy: progress, into: out)
            }
        })
        return !progress.failed
    }

    /// Decodes blocks as `progress` hands them out, until none are left or one is damaged.
    private func decodeBlocks(handedOutBy progress: DecodingProgress, into out: UnsafeMutableRawBufferPointer) {
        blocks.withUnsafeBufferPointer { blocks in
            while let index = progress.claim(below: blocks.count) {
                if blobcache_lz4_decode_blocks(payload.baseAddress, blocks.baseAddress, blocks.count, index,
                                               blocks.count, blockMax, out.baseAddress, rawCount) != 0 {
                    progress.fail()
                }
            }
        }
    }
}

/// Shared by the cores decoding one frame: hands out block numbers 0, 1, 2, … each once, and
/// remembers whether any block was damaged (then no more are handed out).
private final class DecodingProgress: Sendable {
    private let next = Atomic<Int>(0)
    private let damaged = Atomic<Bool>(false)

    /// The next block number nobody has claimed, or `nil` when all `count` are taken or a
    /// block was damaged.
    func claim(below count: Int) -> Int? {
        guard !damaged.load(ordering: .relaxed) else { return nil }
        let index = next.wrappingAdd(1, ordering: .relaxed).oldValue
        return index < count ? index : nil
    }

    func fail() { damaged.store(true, ordering: .relaxed) }

    /// Whether a block was damaged (read after every core is done).
    var failed: Bool { damaged.load(ordering: .relaxed) }
}
