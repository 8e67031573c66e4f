/// Which of Redis Cluster's 16384 hash slots a key belongs to, as the cluster spec computes it:
/// CRC16 (XMODEM) of the key, or of its hash tag, modulo 16384. The hash tag is what lies
/// between the first `{` and the first `}` after it, when that is not empty, so that keys
/// sharing a tag (`{user1000}.following`, `{user1000}.followers`) land on one node.
///
///     let slot = HashSlot.of(Array("blobcache:blob:5d41".utf8))   // 0..<16384
public enum HashSlot {
    /// How many slots a cluster has.
    ///
    ///     var owners = [String?](repeating: nil, count: HashSlot.count)
    public static let count = 16384

    /// The slot of `key` (its bytes, as sent to Redis).
    ///
    ///     HashSlot.of(Array("{user1000}.following".utf8)) == HashSlot.of(Array("{user1000}.followers".utf8))   // true
    public static func of(_ key: [UInt8]) -> Int {
        Int(crc16(hashed(key)) % UInt16(count))
    }

    /// The part of `key` that is hashed: its hash tag when it has a non-empty one, else all of it.
    ///
    ///     HashSlot.hashed(Array("foo{{bar}}zap".utf8))   // "{bar"
    public static func hashed(_ key: [UInt8]) -> ArraySlice<UInt8> {
        guard let open = key.firstIndex(of: UInt8(ascii: "{")),
              let close = key[(open + 1)...].firstIndex(of: UInt8(ascii: "}")),
              close > open + 1 else { return key[...] }
        return key[(open + 1)..<close]
    }

    /// CRC16-XMODEM (polynomial 0x1021, initial value 0, no reflection): Redis's `crc16`.
    ///
    ///     HashSlot.crc16(Array("123456789".utf8)[...])   // 0x31C3
    public static func crc16(_ bytes: ArraySlice<UInt8>) -> UInt16 {
        var crc: UInt16 = 0
        for byte in bytes {
            crc = (crc << 8) ^ table[Int(UInt8(truncatingIfNeeded: crc >> 8) ^ byte)]
        }
        return crc
    }

    /// One entry per leading byte, so that a key costs one lookup a byte rather than eight shifts.
    private static let table: [UInt16] = (0..<256).map { index in
        var crc = UInt16(index) << 8
        for _ in 0..<8 { crc = crc & 0x8000 != 0 ? (crc << 1) ^ 0x1021 : crc << 1 }
        return crc
    }
}
