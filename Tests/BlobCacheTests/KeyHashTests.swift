import Testing
@testable import BlobCache

/// `KeyHash` is part of the index snapshot's format (its tables hold these hashes), so a faster
/// way to compute it must give the same values: here against the definition, a key's bytes
/// taken 8 at a time and the last 1–7 built up byte by byte.
@Suite("Key hash")
struct KeyHashTests {
    private static func reference(_ bytes: [UInt8], seed: UInt64) -> UInt64 {
        func mix(_ value: UInt64) -> UInt64 {
            let product = value &* 0xBF58_476D_1CE4_E5B9
            return (product << 31 | product >> 33) &* 0x94D0_49BB_1331_11EB
        }
        var state = seed ^ (UInt64(bytes.count) &* 0x9E37_79B9_7F4A_7C15)
        var offset = 0
        while bytes.count - offset >= 8 {
            var word: UInt64 = 0
            for index in 0..<8 { word |= UInt64(bytes[offset + index]) << (8 * UInt64(index)) }
            state = mix(state ^ word)
            offset += 8
        }
        if offset < bytes.count {
            var tail: UInt64 = 0
            for index in offset..<bytes.count { tail |= UInt64(bytes[index]) << (8 * UInt64(index - offset)) }
            state = mix(state ^ tail)
        }
        var x = state
        x ^= x >> 33
        x &*= 0xFF51_AFD7_ED55_8CCD
        x ^= x >> 33
        x &*= 0xC4CE_B9FE_1A85_EC53
        x ^= x >> 33
        return x
    }

    @Test("every length from 0 to 64 bytes hashes as defined, and ASCII is told from the rest", arguments: [0, 1, 0x4243_4958] as [UInt64])
    func matchesTheDefinition(seed: UInt64) {
        let ascii = Samples.random(64, seed: seed).map { $0 & 0x7F }
        for count in 0...64 {
            let key = Array(ascii.prefix(count))
            key.withUnsafeBytes { raw in
                let (hash, isASCII) = KeyHash.hashNotingASCII(raw, seed: seed)
                #expect(hash == Self.reference(key, seed: seed), "\(count) bytes")
                #expect(KeyHash.hash(raw, seed: seed) == hash)
                #expect(isASCII)
            }
            for high in 0..<count {
                var other = key
                other[high] |= 0x80
                other.withUnsafeBytes { raw in
                    let (hash, isASCII) = KeyHash.hashNotingASCII(raw, seed: seed)
                    #expect(hash == Self.reference(other, seed: seed), "\(count) bytes, high bit at \(high)")
                    #expect(!isASCII, "\(count) bytes, high bit at \(high)")
                }
            }
        }
    }
}
