import CLZ4

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
        var blocks = [blobcache_lz4_block](repeating: blobcache_lz4_block(),
                                           count: Self.blockCapacity(rawCount: rawCount, payloadCount: payload.count))
        var blockMax = 0
        let count = blobcache_lz4_frame_index(payload.baseAddress, payload.count, &blocks, blocks.count, &blockMax)
        guard Self.blocks(count, of: blockMax, cover: rawCount) else { return nil }
        self.payload = payload
        self.blocks = Array(blocks.prefix(count))
        self.blockMax = blockMax
        self.rawCount = rawCount
    }

    /// The most blocks a frame of `payloadCount` bytes holding `rawCount` bytes can have (the
    /// smallest block size is 64 KiB, and every block takes at least its 4-byte size word).
    static func blockCapacity(rawCount: Int, payloadCount: Int) -> Int {
        min(rawCount / (64 << 10), payloadCount / 4) + 2
    }

    /// Whether `count` blocks of `blockMax` bytes (the last one shorter) hold exactly `rawCount`.
    static func blocks(_ count: Int, of blockMax: Int, cover rawCount: Int) -> Bool {
        count > 0 && blockMax > 0 && count == rawCount / blockMax + (rawCount % blockMax == 0 ? 0 : 1)
    }

    /// Decodes every block into `out` on every core, each core taking the next block nobody has
    /// taken, so that a core that runs `first`, or that the machine lends to something else for
    /// a while, simply decodes fewer. False on any damage.
    func decodeOnEveryCore(into out: UnsafeMutableRawBufferPointer, first: (() -> Void)?) -> Bool {
        let queue = BlockQueue(count: blocks.count)
        blocks.withUnsafeBufferPointer { blocks in
            Parallel.onEveryCore(upTo: blocks.count, first: first) {
                while let index = queue.next() {
                    if blobcache_lz4_decode_blocks(payload.baseAddress, blocks.baseAddress, blocks.count, index,
                                                   blocks.count, blockMax, out.baseAddress, rawCount) != 0 {
                        queue.stop()
                    }
                }
            }
        }
        return !queue.stopped
    }

    /// Compresses `raw` into one LZ4 frame (the frame `lz4` and LZ4F would write: same header,
    /// independent blocks) on every core, each core compressing the next block nobody has
    /// taken, after `headroom` zero bytes. `nil` on error.
    static func encodeOnEveryCore(_ raw: UnsafeRawBufferPointer, headroom: Int, first: (() -> Void)?,
                                  alongside: (() -> Void)? = nil) -> [UInt8]? {
        let blockMax = blobcache_lz4_block_max(raw.count)
        let count = (raw.count + blockMax - 1) / blockMax
        let stride = blobcache_lz4_block_bound(blockMax)
        // Each block is encoded into its own slot, then the slots are packed behind the header.
        let slots = UnsafeMutableRawBufferPointer.allocate(byteCount: stride * count, alignment: 16)
        let sizes = UnsafeMutableBufferPointer<Int>.allocate(capacity: count)
        defer {
            slots.deallocate()
            sizes.deallocate()
        }
        let queue = BlockQueue(count: count)
        Parallel.onEveryCore(upTo: count, first: first, second: alongside) {
            while let index = queue.next() {
                sizes[index] = blobcache_lz4_encode_block(raw.baseAddress, raw.count, blockMax, index,
                                                          slots.baseAddress! + index * stride)
            }
        }
        var header = [UInt8](repeating: 0, count: Int(LZ4F_HEADER_SIZE_MAX))
        let headerSize = Compression.lz4Compressors.withContext { context in
            guard let context else { return 0 }
            return blobcache_lz4_frame_header(OpaquePointer(context), &header, header.count, raw.count)
        }
        guard headerSize > 0 else { return nil }
        let endMark = 4
        let total = headroom + headerSize + sizes.reduce(0, +) + endMark
        return [UInt8](unsafeUninitializedCapacity: total) { out, initialized in
            let out = UnsafeMutableRawBufferPointer(out)
            UnsafeMutableRawBufferPointer(rebasing: out[..<headroom]).initializeMemory(as: UInt8.self, repeating: 0)
            UnsafeMutableRawBufferPointer(rebasing: out[(total - endMark)...]).initializeMemory(as: UInt8.self, repeating: 0)
            var cursor = headroom
            header.withUnsafeBytes { out.baseAddress!.advanced(by: cursor).copyMemory(from: $0.baseAddress!, byteCount: headerSize) }
            cursor += headerSize
            for index in 0..<count {
                out.baseAddress!.advanced(by: cursor).copyMemory(from: slots.baseAddress! + index * stride, byteCount: sizes[index])
                cursor += sizes[index]
            }
            initialized = total   // the last 4 bytes, zero, are the end mark
        }
    }
}
