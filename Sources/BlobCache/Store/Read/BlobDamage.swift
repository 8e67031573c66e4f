/// What is wrong with a stored blob, as fsck names it.
enum BlobDamage: Error, Equatable, Sendable {
    case truncated(String)
    case header(String)
    case sizeMismatch(String)
    case checksum(String)
    case decompression(String)
    case digest(String)
    case missing(String)
    /// A sealed payload did not open: damaged, sealed under another key, or sealed where the
    /// cache has no key (and the reverse: a plain payload in an encrypted cache).
    case sealing(String)

    var detail: String {
        switch self {
        case .truncated(let s), .header(let s), .sizeMismatch(let s), .checksum(let s),
             .decompression(let s), .digest(let s), .missing(let s), .sealing(let s): s
        }
    }

    /// A stable name for reports.
    var kind: String {
        switch self {
        case .truncated: "truncated"
        case .header: "bad-header"
        case .sizeMismatch: "size-mismatch"
        case .checksum: "checksum"
        case .decompression: "decompression"
        case .digest: "digest"
        case .missing: "missing"
        case .sealing: "sealing"
        }
    }
}
