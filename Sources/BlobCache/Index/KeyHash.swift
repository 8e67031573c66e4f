/// The seeded 64-bit hash behind the index's own tables.
///
/// Deterministic for a given seed, so a snapshot of the index can keep each key's hash and
/// a reopened cache need not rehash its keys; the seed is random per cache, so keys crafted
/// to share a bucket in one cache do not share one in another.
enum KeyHash {
    /// Hashes `bytes` (a key's UTF-8) under `seed`.
    static func hash(_ bytes: UnsafeRawBufferPointer, seed: UInt64) -> UInt64 {
        hashNotingASCII(bytes, seed: seed).hash
    }

    /// `hash(_:seed:)`, and whether every byte is below 0x80, in one pass over the bytes:
    /// replay applies a plain ASCII key as it lies, and any other through its `String`.
    ///
    ///     let (hash, isASCII) = KeyHash.hashNotingASCII(key, seed: seed)
    @inline(__always)
    static func hashNotingASCII(_ bytes: UnsafeRawBufferPointer, seed: UInt64) -> (hash: UInt64, isASCII: Bool) {
        var state = seed ^ (UInt64(bytes.count) &* 0x9E37_79B9_7F4A_7C15)
        var bits: UInt64 = 0
        var offset = 0
        while bytes.count - offset >= 8 {
            let word = UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: offset, as: UInt64.self))
            bits |= word
            state = mix(state ^ word)
            offset += 8
        }
        let rest = bytes.count - offset
        if rest > 0 {
            // The last 1–7 bytes as a little-endian number: from the last 8 bytes, shifted
            // down past those already hashed, when there are 8; else byte by byte.
            var tail: UInt64 = 0
            if bytes.count >= 8 {
                let last = UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: bytes.count - 8, as: UInt64.self))
                tail = last >> (8 * UInt64(8 - rest))
            } else {
                for index in 0..<rest { tail |= UInt64(bytes[index]) << (8 * UInt64(index)) }
            }
            bits |= tail
            state = mix(state ^ tail)
        }
        return (finalize(state), bits & 0x8080_8080_8080_8080 == 0)
    }

    /// Hashes a blob id under `seed` (the id is already uniform; the seed keeps it private).
    static func hash(_ id: BlobID, seed: UInt64) -> UInt64 {
        finalize(mix(id.high ^ seed) ^ id.low)
    }

    @inline(__always)
    private static func mix(_ value: UInt64) -> UInt64 {
        let product = value &* 0xBF58_476D_1CE4_E5B9
        return (product << 31 | product >> 33) &* 0x94D0_49BB_1331_11EB
    }

    /// MurmurHash3's 64-bit finalizer: every input bit reaches every output bit.
    @inline(__always)
    private static func finalize(_ value: UInt64) -> UInt64 {
        var x = value
        x ^= x >> 33
        x &*= 0xFF51_AFD7_ED55_8CCD
        x ^= x >> 33
        x &*= 0xC4CE_B9FE_1A85_EC53
        x ^= x >> 33
        return x
    }
}
