/// A set whose value arrives in parts, stored in bounded memory: start it with
/// `BlobCache.startSet(forKey:expiry:pinned:)`, `append` the value's bytes in order, then
/// `finish()` to store it under its key (or `cancel()`). Up to one piece (1 MiB) is gathered in
/// memory and stored as a value set whole would be; a longer value is hashed, compressed and
/// written piece by piece into a staging file, and its key sees it only once `finish()`
/// returns. Nothing is stored, and the key keeps its old value, if the set is cancelled, is
/// dropped unfinished, or fails.
///
/// A value over the cache's byte cap fails with `valueTooLarge` as soon as its stored bytes pass
/// the cap, without reading further. One caller at a time: it may move between threads and
/// tasks (so it is `Sendable`), but two must not append to it at once.
///
///     let upload = try cache.startSet(forKey: "video/42")
///     for try await part in body { try upload.append(part) }
///     let id = try upload.finish()
public final class PendingSet: @unchecked Sendable {
    private let cache: BlobCache
    private let key: String
    private let expiry: Expiry
    private let pinned: Bool
    /// The cache's byte cap when the set started (a larger value could never be stored).
    private let limit: Int?
    private var gathered: [UInt8] = []
    private var writer: PiecedBlobWriter?
    private var done = false

    init(cache: BlobCache, key: String, expiry: Expiry, pinned: Bool, limit: Int?) {
        self.cache = cache
        self.key = key
        self.expiry = expiry
        self.pinned = pinned
        self.limit = limit
        gathered.reserveCapacity(PiecedBlobFormat.pieceSize)
    }

    deinit { cancel() }

    /// The value's bytes taken so far.
    public private(set) var count = 0

    /// Takes the next bytes of the value. Throws `valueTooLarge` once the value can no longer
    /// fit the byte cap, and any error writing its staging file; after a throw the set is over
    /// (nothing stored) and further calls throw `setEnded`.
    ///
    ///     try upload.append(chunk)
    public func append(_ bytes: UnsafeRawBufferPointer) throws {
        guard !done else { throw BlobCacheError.setEnded }
        do {
            var rest = bytes
            while !rest.isEmpty {
                if gathered.count == PiecedBlobFormat.pieceSize { try writeGatheredPiece() }
                let take = min(rest.count, PiecedBlobFormat.pieceSize - gathered.count)
                gathered.append(contentsOf: UnsafeRawBufferPointer(rebasing: rest[..<take]))
                rest = UnsafeRawBufferPointer(rebasing: rest[take...])
                count += take
            }
        } catch {
            cancel()
            throw error
        }
    }

    /// Takes the next bytes of the value; see `append(_:)`.
    ///
    ///     try upload.append(Array("hello".utf8))
    public func append(_ bytes: [UInt8]) throws {
        try bytes.withUnsafeBytes { try append($0) }
    }

    /// Stores the value under the key and returns its id. Throws what a set throws
    /// (`valueTooLarge`, `contentCollision`, I/O errors); either way the set is over.
    ///
    ///     let id = try upload.finish()
    @discardableResult
    public func finish() throws -> BlobID {
        guard !done else { throw BlobCacheError.setEnded }
        defer { cancel() }
        guard let writer else {
            done = true
            return try cache.set(gathered, forRawKey: key, expiry: expiry, pinned: pinned)
        }
        if !gathered.isEmpty { try writer.append(gathered) }
        let (info, staged) = try writer.finish()
        self.writer = nil
        try checkCap(info.footprint, discarding: staged)
        done = true
        return try cache.publishStreamed(info: info, staged: staged, key: key, expiry: expiry, pinned: pinned)
    }

    /// Abandons the set: its staging file is deleted and nothing is stored. Calling it again,
    /// or after `finish()`, does nothing.
    ///
    ///     upload.cancel()
    public func cancel() {
        done = true
        writer?.discard()
        writer = nil
        gathered = []
    }

    /// Hands the full piece to the writer (which hashes it here and writes it on its queue)
    /// and starts the next one.
    private func writeGatheredPiece() throws {
        let writer = try self.writer ?? PiecedBlobWriter(pipeline: cache.engine.pipeline)
        self.writer = writer
        try writer.append(gathered)
        gathered = []
        gathered.reserveCapacity(PiecedBlobFormat.pieceSize)
        try checkCap(writer.storedBytes)
    }

    /// Throws `valueTooLarge` once `stored` bytes are past the cap (deleting `staged`, when given).
    private func checkCap(_ stored: Int, discarding staged: StagedLooseBlob? = nil) throws {
        guard let limit, stored > limit else { return }
        cache.engine.pipeline.discard(staged)
        throw BlobCacheError.valueTooLarge(storedBytes: stored, limit: limit)
    }
}
