/// XXH64 (Yann Collet's xxHash, 64-bit variant, as its specification defines it): the index
/// snapshot's body checksum and a loose blob's (format 2). It replaced zlib's crc32 in both,
/// which was the largest item in `perf record -g workload w4-open DIR KEY` once the snapshot
/// was mapped, and a third of a large get's time (four independent lanes per 32 bytes, where crc32
/// goes byte-table by byte-table).
enum XXHash64 {
    private static let prime1: UInt64 = 0x9E37_79B1_85EB_CA87
    private static let prime2: UInt64 = 0xC2B2_AE3D_27D4_EB4F
    private static let prime3: UInt64 = 0x1656_67B1_9E37_79F9
    private static let prime4: UInt64 = 0x85EB_CA77_C2B2_AE63
    private static let prime5: UInt64 = 0x27D4_EB2F_1656_67C5

    /// The XXH64 hash of `bytes` under `seed`.
    ///
    ///     let digest = XXHash64.hash(body)
    @inline(__always)
    static func hash(_ bytes: UnsafeRawBufferPointer, seed: UInt64 = 0) -> UInt64 {
        let stripes = bytes.count & ~31
        var stream = Stream(seed: seed)
        stream.absorb(UnsafeRawBufferPointer(rebasing: bytes[..<stripes]))
        return stream.finish(tail: UnsafeRawBufferPointer(rebasing: bytes[stripes...]))
    }

    /// XXH64 over bytes that arrive in pieces: every piece but the last a whole number of
    /// 32-byte stripes, the last (fewer than 32 bytes, maybe none) given to `finish`. The
    /// digest is `hash(all bytes, seed:)`'s.
    ///
    ///     var stream = XXHash64.Stream(seed: 0)
    ///     stream.absorb(firstHalf)          // a multiple of 32 bytes
    ///     let digest = stream.finish(tail: lastFewBytes)
    struct Stream {
        private let seed: UInt64
        private var v1, v2, v3, v4: UInt64
        private var count = 0

        init(seed: UInt64) {
            self.seed = seed
            (v1, v2, v3, v4) = (seed &+ prime1 &+ prime2, seed &+ prime2, seed, seed &- prime1)
        }

        /// Takes whole stripes: `bytes.count` must be a multiple of 32.
        @inline(__always)
        mutating func absorb(_ bytes: UnsafeRawBufferPointer) {
            precondition(bytes.count & 31 == 0, "XXHash64.Stream takes whole 32-byte stripes")
            var offset = 0
            while offset < bytes.count {
                v1 = round(v1, word(bytes, offset))
                v2 = round(v2, word(bytes, offset + 8))
                v3 = round(v3, word(bytes, offset + 16))
                v4 = round(v4, word(bytes, offset + 24))
                offset += 32
            }
            count += bytes.count
        }

        /// The digest, after the last `tail.count` (< 32) bytes.
        @inline(__always)
        func finish(tail: UnsafeRawBufferPointer) -> UInt64 {
            var hash: UInt64
            if count > 0 {
                hash = rotate(v1, 1) &+ rotate(v2, 7) &+ rotate(v3, 12) &+ rotate(v4, 18)
                for lane in [v1, v2, v3, v4] { hash = (hash ^ round(0, lane)) &* prime1 &+ prime4 }
            } else {
                hash = seed &+ prime5
            }
            hash &+= UInt64(count + tail.count)
            var offset = 0
            while tail.count - offset >= 8 {
                hash = rotate(hash ^ round(0, word(tail, offset)), 27) &* prime1 &+ prime4
                offset += 8
            }
            if tail.count - offset >= 4 {
                let half = UInt64(UInt32(littleEndian: tail.loadUnaligned(fromByteOffset: offset, as: UInt32.self)))
                hash = rotate(hash ^ (half &* prime1), 23) &* prime2 &+ prime3
                offset += 4
            }
            while offset < tail.count {
                hash = rotate(hash ^ (UInt64(tail[offset]) &* prime5), 11) &* prime1
                offset += 1
            }
            hash ^= hash >> 33
            hash &*= prime2
            hash ^= hash >> 29
            hash &*= prime3
            hash ^= hash >> 32
            return hash
        }
    }

    @inline(__always)
    private static func word(_ bytes: UnsafeRawBufferPointer, _ at: Int) -> UInt64 {
        UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: at, as: UInt64.self))
    }

    /// The checksum of a stored blob whose header bytes `head` precede `payload` elsewhere in
    /// memory: the payload's XXH64 seeded with the header's (docs/FORMAT.md). Loose files keep
    /// all 64 bits, pack records the low 32.
    ///
    ///     let checksum = XXHash64.hash(payload, after: header)
    static func hash(_ payload: UnsafeRawBufferPointer, after head: UnsafeRawBufferPointer) -> UInt64 {
        hash(payload, seed: hash(head))
    }

    @inline(__always)
    private static func round(_ accumulator: UInt64, _ lane: UInt64) -> UInt64 {
        rotate(accumulator &+ lane &* prime2, 31) &* prime1
    }

    @inline(__always)
    private static func rotate(_ value: UInt64, _ bits: UInt64) -> UInt64 { value << bits | value >> (64 - bits) }
}
