/// Where a blob's bytes live on disk.
public enum BlobPlace: Hashable, Sendable, CustomStringConvertible {
    /// A file of its own under `objects/`.
    case loose
    /// A record in a pack segment, at a byte offset.
    case packed(segment: UInt32, offset: UInt64)

    /// `loose`, or `pack N @OFFSET` for a record in segment N.
    public var description: String {
        switch self {
        case .loose: "loose"
        case .packed(let segment, let offset): "pack \(segment) @\(offset)"
        }
    }
}

/// Everything the index knows about one stored blob.
struct BlobInfo: Hashable, Sendable {
    let id: BlobID
    let codec: CodecTag
    /// Bytes of the value.
    let rawLength: Int
    /// Bytes of the payload as stored (after compression).
    let payloadLength: Int
    var place: BlobPlace

    /// The longest value or payload a record may claim (256 TiB): what every length read from
    /// a file is checked against, so that sums and offsets computed from them cannot overflow.
    static let maxLength = 1 << 48

    /// Bytes the blob takes on disk, header included: what the size cap counts.
    var footprint: Int {
        switch place {
        case .loose: LooseBlobFormat.headerSize + payloadLength
        case .packed: PackFormat.recordHeaderSize + payloadLength
        }
    }
}
