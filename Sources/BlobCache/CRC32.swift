import CZlib

/// zlib's CRC-32 (the ISO-HDLC polynomial), which every loose blob, pack record and journal
/// record carries. Runs at several GB/s here.
enum CRC32 {
    /// Continues `crc` over `bytes`; start with 0.
    static func update(_ crc: UInt32, _ bytes: UnsafeRawBufferPointer) -> UInt32 {
        guard let base = bytes.baseAddress, bytes.count > 0 else { return crc }
        var result = UInt(crc)
        var offset = 0
        while offset < bytes.count {
            let chunk = min(bytes.count - offset, Int(UInt32.max >> 1))
            result = crc32(result, base.advanced(by: offset).assumingMemoryBound(to: Bytef.self), uInt(chunk))
            offset += chunk
        }
        return UInt32(truncatingIfNeeded: result)
    }

    /// CRC-32 of `bytes`.
    static func checksum(_ bytes: UnsafeRawBufferPointer) -> UInt32 { update(0, bytes) }

    /// The CRC of A followed by B, from the CRCs of A and B and B's length (zlib's crc32_combine).
    static func combine(_ first: UInt32, _ second: UInt32, secondLength: Int) -> UInt32 {
        UInt32(truncatingIfNeeded: crc32_combine(uLong(first), uLong(second), off_t(secondLength)))
    }

    /// CRC-32 of an array of bytes.
    static func checksum(_ bytes: [UInt8]) -> UInt32 { bytes.withUnsafeBytes { update(0, $0) } }
}
