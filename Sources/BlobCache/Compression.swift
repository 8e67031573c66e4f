import CLZ4
import CZlib

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
    /// The `alongside` tasks run at the same time, on every core (the caller's checksum); a large
    /// LZ4 payload also has its blocks decoded on two cores.
    static func decode(_ payload: UnsafeRawBufferPointer, tag: CodecTag, rawCount: Int,
                       alongside: [() -> Void] = []) -> [UInt8]? {
        if tag == .lz4, rawCount >= Parallel.threshold, let frame = LZ4Frame(payload, rawCount: rawCount) {
            return decodeInto(rawCount) { out in
                var even = false, odd = false
                Parallel.run([{ even = frame.decode(into: out, first: 0, step: 2) },
                              { odd = frame.decode(into: out, first: 1, step: 2) }] + alongside)
                return even && odd
            }
        }
        guard !alongside.isEmpty else { return decodeSequentially(payload, tag: tag, rawCount: rawCount) }
        var value: [UInt8]?
        Parallel.run([{ value = decodeSequentially(payload, tag: tag, rawCount: rawCount) }] + alongside)
        return value
    }

    /// For a large LZ4 payload: decodes it and computes the CRC of `head` followed by it, in one
    /// pass per core (each core checksums a contiguous half of the frame block by block and
    /// decodes each block while its bytes are in cache). `nil` when `payload` is not a frame
    /// whose blocks can be split (callers then decode and checksum separately). The value is
    /// only to be used when the CRC matches (decoding damaged input is memory-safe).
    static func decodeChecksumming(_ payload: UnsafeRawBufferPointer, tag: CodecTag, rawCount: Int,
                                   after head: UnsafeRawBufferPointer) -> (value: [UInt8]?, crc: UInt32)? {
        guard tag == .lz4, rawCount >= Parallel.threshold, let frame = LZ4Frame(payload, rawCount: rawCount),
              frame.blocks.count >= 2 else { return nil }
        let middle = frame.blocks.count / 2
        // Each block is a 4-byte size field, then its bytes.
        let split = frame.blocks[middle].offset - 4
        var crc: UInt32 = 0
        let value = decodeInto(rawCount) { out in
            var first: (ok: Bool, crc: UInt32) = (false, 0), second: (ok: Bool, crc: UInt32) = (false, 0)
            Parallel.run([
                { first = frame.decode(into: out, blocks: 0..<middle, checksumming: 0..<split, from: CRC32.checksum(head)) },
                { second = frame.decode(into: out, blocks: middle..<frame.blocks.count, checksumming: split..<payload.count, from: 0) },
            ])
            crc = CRC32.combine(first.crc, second.crc, secondLength: payload.count - split)
            return first.ok && second.ok
        }
        return (value, crc)
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

    /// Decodes `blocks` into `out`, continuing `crc` over the payload bytes in `range` (which
    /// holds those blocks: bytes before the first block go before it, bytes after the last go
    /// after it), one block at a time so that each is checksummed and decoded while in cache.
    func decode(into out: UnsafeMutableRawBufferPointer, blocks range: Range<Int>, checksumming bytes: Range<Int>,
                from crc: UInt32) -> (ok: Bool, crc: UInt32) {
        var crc = crc, cursor = bytes.lowerBound, ok = true
        blocks.withUnsafeBufferPointer { blocks in
            for index in range {
                let end = blocks[index].offset + blocks[index].size
                crc = CRC32.update(crc, UnsafeRawBufferPointer(rebasing: payload[cursor..<end]))
                cursor = end
                if ok {
                    ok = blobcache_lz4_decode_blocks(payload.baseAddress, blocks.baseAddress, blocks.count, index,
                                                     blocks.count, blockMax, out.baseAddress, rawCount) == 0
                }
            }
        }
        crc = CRC32.update(crc, UnsafeRawBufferPointer(rebasing: payload[cursor..<bytes.upperBound]))
        return (ok, crc)
    }

    /// Decodes blocks `first`, `first + step`, … into `out`; false on any damage.
    func decode(into out: UnsafeMutableRawBufferPointer, first: Int, step: Int) -> Bool {
        blocks.withUnsafeBufferPointer { blocks in
            blobcache_lz4_decode_blocks(payload.baseAddress, blocks.baseAddress, blocks.count, first, step,
                                        blockMax, out.baseAddress, rawCount) == 0
        }
    }
}
