import CLZ4
import CZlib

/// Compresses and decompresses blob payloads with the native libraries, reusing their contexts.
///
/// Encoding writes the payload after `headroom` bytes the caller fills with its header, so a
/// blob goes to disk from one buffer. Decoding checks that the payload expands to exactly the
/// recorded length and is used up; anything else is `nil`, never wrong bytes.
enum Compression {
    static let lz4Compressors = ContextPool(
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

    /// Encodes `raw` with `codec`, falling back to `.none` when compression does not pay: when
    /// it saves nothing, or less than `minimumSaving` of the value. `first` (the caller's hash)
    /// runs before or, for a large value, while it is encoded: a large LZ4 value is compressed
    /// on every core, and the core that ran `first` joins in after. `alongside` (the caller's
    /// file create) runs on another core than `first` where there is one, before that core's
    /// share of the encoding.
    ///
    ///     let encoded = Compression.encode(value, codec: .lz4, headroom: 40)
    static func encode(_ raw: UnsafeRawBufferPointer, codec: Codec, headroom: Int, minimumSaving: Double = 0,
                       first: (() -> Void)? = nil, alongside: (() -> Void)? = nil) -> Encoded {
        let compressed: Encoded?
        if codec == .lz4, raw.count >= Parallel.threshold {
            compressed = LZ4Frame.encodeOnEveryCore(raw, headroom: headroom, first: first, alongside: alongside).map {
                Encoded(buffer: $0, tag: .lz4, headroom: headroom)
            }
        } else if let first, raw.count >= Parallel.threshold, codec != .none || alongside != nil {
            var result: Encoded?
            Parallel.run([first, {
                alongside?()
                result = compress(raw, codec: codec, headroom: headroom)
            }])
            compressed = result
        } else {
            first?()
            alongside?()
            compressed = raw.isEmpty ? nil : compress(raw, codec: codec, headroom: headroom)
        }
        if let compressed, pays(compressed.payloadCount, of: raw.count, minimumSaving: minimumSaving) { return compressed }
        var buffer = [UInt8](repeating: 0, count: headroom)
        buffer.reserveCapacity(headroom + raw.count)
        buffer.append(contentsOf: raw)
        return Encoded(buffer: buffer, tag: .none, headroom: headroom)
    }

    /// Whether `payloadCount` bytes are worth storing for `rawCount`: fewer, by at least
    /// `minimumSaving` of `rawCount` (NaN: never).
    ///
    ///     let kept = Compression.pays(900, of: 1000, minimumSaving: 0.125)   // false
    static func pays(_ payloadCount: Int, of rawCount: Int, minimumSaving: Double) -> Bool {
        payloadCount < rawCount && Double(rawCount - payloadCount) >= Double(rawCount) * minimumSaving
    }

    /// Compresses `raw` on this core with the library's own frame or stream writer; `nil` for
    /// `.none` or on failure. (Large LZ4 values go through `LZ4Frame.encodeOnEveryCore`, which
    /// writes the same bytes.)
    static func compress(_ raw: UnsafeRawBufferPointer, codec: Codec, headroom: Int) -> Encoded? {
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
        guard rawCount >= 0, rawCount <= maxRawCount(payloadCount: payload.count, tag: tag) else {
            first?()
            return nil
        }
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

    /// The most bytes `payloadCount` bytes of `tag` can decode to: the codec's largest expansion
    /// (LZ4 below 256:1, deflate at most 1032:1) plus slack for frame headers, and never more
    /// than `BlobInfo.maxLength`. Nothing larger is allocated, whatever a header claims.
    static func maxRawCount(payloadCount: Int, tag: CodecTag) -> Int {
        let bound = switch tag {
        case .none: payloadCount
        case .lz4: payloadCount * 256 + (1 << 16)
        case .zlib: payloadCount * 1032 + (1 << 16)
        }
        return min(bound, BlobInfo.maxLength)
    }

    /// Decodes `payload` on this core with the library's own frame or stream reader.
    static func decodeSequentially(_ payload: UnsafeRawBufferPointer, tag: CodecTag, rawCount: Int) -> [UInt8]? {
        switch tag {
        case .none:
            return payload.count == rawCount ? Array(payload) : nil
        case .lz4:
            return decodeInto(rawCount) { out in
                // The cache's own small frames: one block, decoded straight (no pooled context,
                // no lock). Any other frame, or one that does not decode, goes to LZ4F.
                if blobcache_lz4_decode_single_block(payload.baseAddress, payload.count, out.baseAddress, out.count) == 0 {
                    return true
                }
                return lz4Decompressors.withContext(reusableAfter: { $0 }) { context in
                    guard let context else { return false }
                    return blobcache_lz4_decompress_frame(OpaquePointer(context), out.baseAddress, out.count,
                                                          payload.baseAddress, payload.count) == 0
                }
            }
        case .zlib:
            return decodeInto(rawCount) { out in
                inflaters.withContext(reusableAfter: { $0 }) { context in
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
