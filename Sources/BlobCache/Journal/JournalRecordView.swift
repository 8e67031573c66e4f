/// A journal record parsed where it lies: its key is a view of the journal's bytes, not a
/// `String`. Replay applies these, so a record costs no allocation; `JournalRecord(_:)` makes
/// the owned form when a record has to outlive the bytes.
///
///     guard let view = JournalRecordView.decode(kind: kind, payload: payload) else { /* damage */ }
enum JournalRecordView {
    case set(EntryView)
    case access(key: UnsafeRawBufferPointer, time: Int64)
    case remove(key: UnsafeRawBufferPointer, reason: RemovalReason)
    case removeAll(includingPinned: Bool)
    case relocate(BlobInfo)

    /// The key the record names (`set`, `access`, `remove`).
    var key: UnsafeRawBufferPointer? {
        switch self {
        case .set(let entry): entry.key
        case .access(let key, _), .remove(let key, _): key
        case .removeAll, .relocate: nil
        }
    }

    /// The blob the record names (`set`, `relocate`).
    var blob: BlobInfo? {
        switch self {
        case .set(let entry): entry.blob
        case .relocate(let blob): blob
        case .access, .remove, .removeAll: nil
        }
    }

    /// Parses a payload of `kind` (docs/FORMAT.md, "Journal"); `nil` when it does not parse
    /// (treated as damage).
    static func decode(kind rawKind: UInt8, payload: UnsafeRawBufferPointer) -> JournalRecordView? {
        guard let kind = JournalRecord.Kind(rawValue: rawKind) else { return nil }
        var reader = BinaryReader(payload)
        let record: JournalRecordView?
        switch kind {
        case .set:
            guard let key = reader.readLengthPrefixedBytes(), let flags = reader.readUInt8(),
                  let blob = decodeBlob(&reader),
                  let created = reader.readInt64(), let expiry = reader.readInt64(), let access = reader.readInt64()
            else { return nil }
            record = .set(EntryView(key: key, blob: blob, pinned: flags & 1 != 0, created: created,
                                    expiry: expiry, access: access, isProtected: flags & 2 != 0))
        case .access:
            guard let time = reader.readInt64(), let key = reader.readLengthPrefixedBytes() else { return nil }
            record = .access(key: key, time: time)
        case .remove:
            guard let reason = reader.readUInt8().flatMap(RemovalReason.init(rawValue:)), reason != .cleared,
                  let key = reader.readLengthPrefixedBytes() else { return nil }
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
    private static func decodeBlob(_ reader: inout BinaryReader) -> BlobInfo? {
        guard let id = reader.readBlobID(), let codec = reader.readUInt8().flatMap(CodecTag.init(rawValue:)),
              let raw = reader.readUInt64(), let stored = reader.readUInt64(), let place = decodePlace(&reader),
              raw <= UInt64(BlobInfo.maxLength), stored <= UInt64(BlobInfo.maxLength)
        else { return nil }
        // A pack record's stored length field has four bytes.
        if case .packed = place, stored > UInt64(UInt32.max) { return nil }
        return BlobInfo(id: id, codec: codec, rawLength: Int(raw), payloadLength: Int(stored), place: place)
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

/// A `set` record's entry, its key a view of the bytes it was parsed from.
struct EntryView {
    var key: UnsafeRawBufferPointer
    var blob: BlobInfo
    var pinned: Bool
    var created: Int64
    /// `Int64.max` means never.
    var expiry: Int64
    var access: Int64
    /// In a segmented LRU's protected segment (flags bit 1).
    var isProtected = false
}

extension JournalRecord {
    /// The owned form of `view` (its key copied into a `String`).
    init(_ view: JournalRecordView) {
        switch view {
        case .set(let entry): self = .set(EntryRecord(entry))
        case .access(let key, let time): self = .access(key: String(decoding: key, as: UTF8.self), time: time)
        case .remove(let key, let reason): self = .remove(key: String(decoding: key, as: UTF8.self), reason: reason)
        case .removeAll(let includingPinned): self = .removeAll(includingPinned: includingPinned)
        case .relocate(let blob): self = .relocate(blob)
        }
    }

    /// Calls `body` with this record as a view of its key's UTF-8.
    func withView<Result>(_ body: (JournalRecordView) -> Result) -> Result {
        switch self {
        case .set(let entry): entry.withView { body(.set($0)) }
        case .access(var key, let time): key.withUTF8 { body(.access(key: UnsafeRawBufferPointer($0), time: time)) }
        case .remove(var key, let reason): key.withUTF8 { body(.remove(key: UnsafeRawBufferPointer($0), reason: reason)) }
        case .removeAll(let includingPinned): body(.removeAll(includingPinned: includingPinned))
        case .relocate(let blob): body(.relocate(blob))
        }
    }
}

extension EntryRecord {
    /// The owned form of `view` (its key copied into a `String`).
    init(_ view: EntryView) {
        self.init(key: String(decoding: view.key, as: UTF8.self), blob: view.blob, pinned: view.pinned,
                  created: view.created, expiry: view.expiry, access: view.access, isProtected: view.isProtected)
    }

    /// Calls `body` with this entry as a view of its key's UTF-8.
    func withView<Result>(_ body: (EntryView) -> Result) -> Result {
        var key = key
        return key.withUTF8 {
            body(EntryView(key: UnsafeRawBufferPointer($0), blob: blob, pinned: pinned, created: created,
                           expiry: expiry, access: access, isProtected: isProtected))
        }
    }
}
