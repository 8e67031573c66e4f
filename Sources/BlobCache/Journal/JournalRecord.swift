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
            writer.append((entry.pinned ? UInt8(1) : 0) | (entry.isProtected ? 2 : 0))
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
    static func decode(kind: UInt8, payload: UnsafeRawBufferPointer) -> JournalRecord? {
        JournalRecordView.decode(kind: kind, payload: payload).map(JournalRecord.init)
    }

    /// blob id (16), codec (1), raw length (8), stored length (8), place (13)
    private static func encode(_ blob: BlobInfo, into writer: inout BinaryWriter) {
        writer.append(digestOf: blob.id)
        writer.append(blob.codec.rawValue)
        writer.append(UInt64(blob.rawLength))
        writer.append(UInt64(blob.payloadLength))
        encode(blob.place, into: &writer)
    }

    private static func encode(_ place: BlobPlace, into writer: inout BinaryWriter) {
        switch place {
        case .loose:
            writer.append(UInt8(0)); writer.append(UInt32(0)); writer.append(UInt64(0))
        case .packed(let segment, let offset):
            writer.append(UInt8(1)); writer.append(segment); writer.append(offset)
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
    /// In a segmented LRU's protected segment (flags bit 1; only a rewrite writes it).
    var isProtected = false
}
