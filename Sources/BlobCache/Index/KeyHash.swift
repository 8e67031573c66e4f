/// The seeded 64-bit hash behind the index's own tables.
///
/// Deterministic for a given seed, so a snapshot of the index can keep each key's hash and
/// a reopened cache need not rehash its keys; the seed is random per cache, so keys crafted
/// to share a bucket in one cache do not share one in another.
enum KeyHash {
    /// Hashes `bytes` (a key's UTF-8) under `seed`.
    static func hash(_ bytes: UnsafeRawBufferPointer, seed: UInt64) -> UInt64 {
        var state = seed ^ (UInt64(bytes.count) &* 0x9E37_79B9_7F4A_7C15)
        var offset = 0
        while bytes.count - offset >= 8 {
            state = mix(state ^ UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: offset, as: UInt64.self)))
            offset += 8
        }
        if offset < bytes.count {
            var tail: UInt64 = 0
            for index in offset..<bytes.count { tail |= UInt64(bytes[index]) << (8 * UInt64(index - offset)) }
            state = mix(state ^ tail)
        }
        return finalize(state)
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
