import Crypto

/// A key record as a remote store holds it (docs/FORMAT.md, "Remote objects"): the key, the
/// id of the blob it holds, its expiry and the SHA-256 of its value, optionally tagged with
/// HMAC-SHA256 under the remote authentication key, framed by a magic, a version and a CRC-32.
struct RemoteKeyRecord: Equatable, Sendable {
    static let magic: UInt32 = 0x524B_4342 // "BCKR" read as a little-endian word
    static let version: UInt8 = 2
    /// Flag bit 0: an authentication tag follows the key.
    static let tagged: UInt8 = 1

    /// The raw key (a namespace's keys carry its prefix): a record is used only for its own key,
    /// so two keys whose MD5s collide can never read each other's values.
    let key: String
    let id: BlobID
    /// Nanoseconds since 1970; `Nanoseconds.never` for none.
    let expiry: Int64
    /// The SHA-256 of the value: what tells the value apart from another with the same MD5.
    /// `nil` in a version 1 record (written by an earlier release).
    let sha256: [UInt8]?

    /// Why a record's bytes are not used.
    enum Refusal: Error, Equatable {
        /// Not one whole, intact record of a known version.
        case damaged
        /// An authentication key is set and the record carries no tag, or a wrong one.
        case unauthenticated
    }

    /// The record's bytes, tagged under `key` when one is given.
    func encoded(authenticatingWith authentication: SymmetricKey?) -> [UInt8] {
        var writer = BinaryWriter()
        writer.append(Self.magic)
        writer.append(Self.version)
        writer.append(authentication == nil ? 0 : Self.tagged)
        writer.append(bytes: [0, 0])
        writer.append(digestOf: id)
        writer.append(expiry)
        writer.append(bytes: sha256 ?? [UInt8](repeating: 0, count: 32))
        writer.append(lengthPrefixed: key)
        if let authentication {
            writer.append(bytes: HMAC<SHA256>.authenticationCode(for: writer.bytes, using: authentication))
        }
        writer.append(CRC32.checksum(writer.bytes))
        return writer.bytes
    }

    /// Parses a record. With `authentication`, only a version 2 record whose tag verifies under
    /// it is accepted; without, version 1 and 2 records are (a tag is then not checked).
    static func decode(_ bytes: [UInt8], authenticatingWith authentication: SymmetricKey?) -> Result<RemoteKeyRecord, Refusal> {
        bytes.withUnsafeBytes { buffer in
            guard buffer.count > 4 else { return .failure(.damaged) }
            let body = UnsafeRawBufferPointer(rebasing: buffer[0..<buffer.count - 4])
            var crc = BinaryReader(buffer, offset: body.count)
            guard crc.readUInt32() == CRC32.checksum(body) else { return .failure(.damaged) }
            var reader = BinaryReader(body)
            guard reader.readUInt32() == magic, let version = reader.readUInt8() else { return .failure(.damaged) }
            switch version {
            case 1:
                guard reader.readBytes(3) != nil, let id = reader.readBlobID(), let expiry = reader.readInt64(),
                      let keyBytes = reader.readLengthPrefixedBytes(), reader.remaining == 0,
                      let key = String(validating: keyBytes, as: UTF8.self) else { return .failure(.damaged) }
                guard authentication == nil else { return .failure(.unauthenticated) }
                return .success(RemoteKeyRecord(key: key, id: id, expiry: expiry, sha256: nil))
            case 2:
                guard let flags = reader.readUInt8(), flags & ~tagged == 0, reader.readUInt16() == 0,
                      let id = reader.readBlobID(), let expiry = reader.readInt64(),
                      let digest = reader.readBytes(32), let keyBytes = reader.readLengthPrefixedBytes(),
                      let key = String(validating: keyBytes, as: UTF8.self) else { return .failure(.damaged) }
                let signed = body.count - reader.remaining
                if flags & tagged != 0 {
                    guard let tag = reader.readBytes(32), reader.remaining == 0 else { return .failure(.damaged) }
                    if let authentication, !HMAC<SHA256>.isValidAuthenticationCode(
                        Array(tag), authenticating: Array(body[0..<signed]), using: authentication) {
                        return .failure(.unauthenticated)
                    }
                } else {
                    guard reader.remaining == 0 else { return .failure(.damaged) }
                    guard authentication == nil else { return .failure(.unauthenticated) }
                }
                return .success(RemoteKeyRecord(key: key, id: id, expiry: expiry, sha256: Array(digest)))
            default:
                return .failure(.damaged)
            }
        }
    }
}
