/// What a reader takes from the store under the lock: where a blob is, so that it reads it
/// without the lock (through `BlobPipeline`).
extension BlobStore {
    /// What a reader needs to fetch a blob without holding the cache lock.
    enum Location: Sendable {
        case loose(CachePath)
        /// In `segment` at `offset`; the segment had `writtenEnd` bytes when the read began.
        case packed(PackSegment, offset: UInt64, writtenEnd: Int64)
    }

    /// Where to read `info` (opening its segment if needed); `nil` when its segment is gone.
    func location(of info: BlobInfo) throws -> Location? {
        switch info.place {
        case .loose: return .loose(files.loosePath(of: info.id))
        case .packed(let number, let offset):
            guard let segment = try segment(number) else { return nil }
            segment.prefetchRecord(at: offset)
            return .packed(segment, offset: offset, writtenEnd: segmentSizes[number] ?? 0)
        }
    }

    /// A human-readable location for reports.
    func describe(_ info: BlobInfo) -> String {
        switch info.place {
        case .loose: files.loosePath(of: info.id).string
        case .packed(let segment, let offset): files.segmentPath(segment).string + "@\(offset)"
        }
    }
}
