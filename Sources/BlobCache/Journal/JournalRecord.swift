/// One journal record (docs/FORMAT.md, "Journal").
enum JournalRecord: Equatable {
    /// An entry made or replaced.
    case set(EntryRecord)
    /// An entry read: its recency, persisted (coalesced).
    case access(key: String, time: Int64)
    /// An entry dropped.
    case remove(key: String, reason: RemovalReason)
    /// Every entry dropped (pinned ones too when `includingPinned`).
    case removeAll(includingPinned: Bool)
    /// A blob rewritten: moved by pack garbage collection, or re-encoded by recompression.
    case relocate(BlobInfo)

    enum Kind: UInt8 {
        case set = 1, access = 2, remove = 3, removeAll = 4, relocate = 5
    }

    var kind: Kind {
        switch self {
        case .set: .set
        case .access: .access
        case .remove: .remove
        case .removeAll: .removeAll
        case .relocate: .relocate
        }
    }

    /// Appends the payload (not the frame) to `writer`.
    func encodePayload(into writer: inout BinaryWriter) {
        switch self {
        case .set(let entry):
            writer.append(lengthPrefixed: entry.key)
            writer.append(entry.pinned ? UInt8(1) : 0)
            Self.encode(entry.blob, into: &writer)
            writer.append(entry.created)
            writer.append(entry.expiry)
            writer.append(entry.access)
        case .access(let key, let time):
            writer.append(time)
            writer.append(lengthPrefixed: key)
        case .remove(let key, let reason):
            var key = key
            key.withUTF8 { Self.encodeRemove(keyBytes: UnsafeRawBufferPointer($0), reason: reason, into: &writer) }
        case .removeAll(let includingPinned):
            writer.append(includingPinned ? UInt8(1) : 0)
        case .relocate(let blob):
            Self.encode(blob, into: &writer)
        }
    }

    /// The payload of a `remove` record for the key whose UTF-8 is `keyBytes` (also framed
    /// straight from the index's key bytes, without a `String`, for evictions).
    static func encodeRemove(keyBytes: UnsafeRawBufferPointer, reason: RemovalReason, into writer: inout BinaryWriter) {
        writer.append(reason.journaled.rawValue)
        writer.append(UInt32(keyBytes.count))
        writer.append(bytes: keyBytes)
    }

    /// Parses a payload of `kind`; `nil` when it does not parse (treated as damage).
    static func decode(kind rawKind: UInt8, payload: UnsafeRawBufferPointer) -> JournalRecord? {
        guard let kind = Kind(rawValue: rawKind) else { return nil }
        var reader = BinaryReader(payload)
        let record: JournalRecord?
        switch kind {
        case .set:
            guard let key = reader.readLengthPrefixedString(), let flags = reader.readUInt8(),
                  let blob = decodeBlob(&reader),
                  let created = reader.readInt64(), let expiry = reader.readInt64(), let access = reader.readInt64()
            else { return nil }
            record = .set(EntryRecord(key: key, blob: blob, pinned: flags & 1 != 0, created: created,
                                      expiry: expiry, access: access))
        case .access:
            guard let time = reader.readInt64(), let key = reader.readLengthPrefixedString() else { return nil }
            record = .access(key: key, time: time)
        case .remove:
            guard let reason = reader.readUInt8().flatMap(RemovalReason.init(rawValue:)), reason != .cleared,
                  let key = reader.readLengthPrefixedString() else { return nil }
            record = .remove(key: key, reason: reason)
        case .removeAll:
            guard let flag = reader.readUInt8() else { return nil }
            record = .removeAll(includingPinned: flag != 0)
        case .relocate:
            guard let blob = decodeBlob(&reader) else { return nil }
            record = .relocate(blob)
        }
        return reader.remaining == 0 ? record : nil
    }

    /// blob id (16), codec (1), raw length (8), stored length (8), place (13)
    private static func encode(_ blob: BlobInfo, into writer: inout BinaryWriter) {
        writer.append(digestOf: blob.id)
        writer.append(blob.codec.rawValue)
        writer.append(UInt64(blob.rawLength))
        writer.append(UInt64(blob.payloadLength))
        encode(blob.place, into: &writer)
    }

    private static func decodeBlob(_ reader: inout BinaryReader) -> BlobInfo? {
        guard let id = reader.readBlobID(), let codec = reader.readUInt8().flatMap(CodecTag.init(rawValue:)),
              let raw = reader.readUInt64(), let stored = reader.readUInt64(), let place = decodePlace(&reader),
              raw <= UInt64(BlobInfo.maxLength), stored <= UInt64(BlobInfo.maxLength)
        else { return nil }
        // A pack record's stored length field has four bytes.
        if case .packed = place, stored > UInt64(UInt32.max) { return nil }
        return BlobInfo(id: id, codec: codec, rawLength: Int(raw), payloadLength: Int(stored), place: place)
    }

    private static func encode(_ place: BlobPlace, into writer: inout BinaryWriter) {
        switch place {
        case .loose:
            writer.append(UInt8(0)); writer.append(UInt32(0)); writer.append(UInt64(0))
        case .packed(let segment, let offset):
            writer.append(UInt8(1)); writer.append(segment); writer.append(offset)
        }
    }

    private static func decodePlace(_ reader: inout BinaryReader) -> BlobPlace? {
        guard let kind = reader.readUInt8(), let segment = reader.readUInt32(), let offset = reader.readUInt64() else {
            return nil
        }
        switch kind {
        case 0: return .loose
        case 1:
            guard PackFormat.isValidSegmentNumber(segment), offset <= UInt64(Int32.max) * 16 else { return nil }
            return .packed(segment: segment, offset: offset)
        default: return nil
        }
    }
}

/// The state of one entry as a `set` record carries it.
struct EntryRecord: Equatable {
    var key: String
    var blob: BlobInfo
    var pinned: Bool
    var created: Int64
    /// `Int64.max` means never.
    var expiry: Int64
    var access: Int64
}
