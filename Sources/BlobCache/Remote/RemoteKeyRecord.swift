/// A key record as a remote store holds it (docs/FORMAT.md, "Remote key records"): the key,
/// the id of the blob it holds, and its expiry, framed by a magic, a version and a CRC-32.
struct RemoteKeyRecord: Equatable, Sendable {
    static let magic: UInt32 = 0x524B_4342 // "BCKR" read as a little-endian word
    static let version: UInt8 = 1

    /// The raw key (a namespace's keys carry its prefix): a record is used only for its own key,
    /// so two keys whose MD5s collide can never read each other's values.
    let key: String
    let id: BlobID
    /// Nanoseconds since 1970; `Nanoseconds.never` for none.
    let expiry: Int64

    /// The record's bytes.
    var encoded: [UInt8] {
        var writer = BinaryWriter()
        writer.append(Self.magic)
        writer.append(Self.version)
        writer.append(bytes: [0, 0, 0])
        writer.append(digestOf: id)
        writer.append(expiry)
        writer.append(lengthPrefixed: key)
        writer.append(CRC32.checksum(writer.bytes))
        return writer.bytes
    }

    /// Parses a record; `nil` unless the bytes are one whole, intact record of this version.
    static func decode(_ bytes: [UInt8]) -> RemoteKeyRecord? {
        bytes.withUnsafeBytes { buffer in
            guard buffer.count > 4 else { return nil }
            let body = UnsafeRawBufferPointer(rebasing: buffer[0..<buffer.count - 4])
            var crc = BinaryReader(buffer, offset: body.count)
            guard crc.readUInt32() == CRC32.checksum(body) else { return nil }
            var reader = BinaryReader(body)
            guard reader.readUInt32() == magic, reader.readUInt8() == version, reader.readBytes(3) != nil,
                  let id = reader.readBlobID(), let expiry = reader.readInt64(),
                  let key = reader.readLengthPrefixedString(), reader.remaining == 0 else { return nil }
            return RemoteKeyRecord(key: key, id: id, expiry: expiry)
        }
    }
}
