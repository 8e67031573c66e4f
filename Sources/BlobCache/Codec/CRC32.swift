import CZlib

/// zlib's CRC-32 (the ISO-HDLC polynomial). It checks the journal's header and every journal
/// record, a pack segment's header and the index snapshot's header page. Blob payloads are
/// checked with XXH3 (loose files, `XXH3`) and XXH64 (pack records, `XXHash64`); CRC-32 is only
/// read there, in the loose blobs of format version 1 and the pack records of checksum kind 0
/// that earlier releases wrote.
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

    /// CRC-32 of an array of bytes.
    static func checksum(_ bytes: [UInt8]) -> UInt32 { bytes.withUnsafeBytes { update(0, $0) } }
}
