import SystemPackage

extension AsyncBlobCache {
    /// Starts a set whose value arrives in parts; see `BlobCache.startSet(forKey:expiry:pinned:)`.
    /// Its appends and its finish run on BlobCache's I/O queue, never on Swift's cooperative threads.
    ///
    ///     let upload = try await cache.async.startSet(forKey: "video/42")
    ///     for try await part in body { try await upload.append(part) }
    ///     try await upload.finish()
    public func startSet(forKey key: String, expiry: Expiry? = nil, pinned: Bool = false) async throws -> AsyncPendingSet {
        let cache = self.cache
        return AsyncPendingSet(try await Self.run { try cache.startSet(forKey: key, expiry: expiry, pinned: pinned) })
    }

    /// Stores the bytes `chunks` yields, in order, under `key`, in bounded memory; see
    /// `BlobCache.startSet(forKey:expiry:pinned:)`. An error from the sequence cancels the set.
    ///
    ///     try await cache.async.set(chunks: upload.body, forKey: "video/42")
    @discardableResult
    public func set<Chunks: AsyncSequence>(chunks: Chunks, forKey key: String, expiry: Expiry? = nil,
                                           pinned: Bool = false) async throws -> BlobID where Chunks.Element == [UInt8] {
        let pending = try await startSet(forKey: key, expiry: expiry, pinned: pinned)
        do {
            for try await chunk in chunks { try await pending.append(chunk) }
        } catch {
            await pending.cancel()
            throw error
        }
        return try await pending.finish()
    }

    /// Stores everything `source` gives until its end under `key`; see
    /// `BlobCache.set(contentsOf:forKey:expiry:pinned:)`.
    ///
    ///     try await cache.async.set(contentsOf: fd, forKey: "model/7")
    @discardableResult
    public func set(contentsOf source: FileDescriptor, forKey key: String, expiry: Expiry? = nil,
                    pinned: Bool = false) async throws -> BlobID {
        try await run { try $0.set(contentsOf: source, forKey: key, expiry: expiry, pinned: pinned) }
    }

    /// Writes the value under `key` to `destination`; see `BlobCache.write(forKey:to:)`.
    ///
    ///     let found = try await cache.async.write(forKey: "video/42", to: out)
    public func write(forKey key: String, to destination: FileDescriptor) async throws -> Bool {
        try await run { try $0.write(forKey: key, to: destination) }
    }

    /// The value under `key` as an asynchronous sequence of checked chunks, read one at a time
    /// as the consumer asks for them (a server sending it to a slow client holds one chunk);
    /// `nil` for a miss. See `ValueReader`.
    ///
    ///     guard let value = try await cache.async.chunks(forKey: "video/42") else { return notFound() }
    ///     head(contentLength: value.length)
    ///     for try await chunk in value { try await send(chunk) }
    public func chunks(forKey key: String) async throws -> ValueChunks? {
        try await run { try $0.openValue(forKey: key) }.map(ValueChunks.init)
    }
}

/// A `PendingSet` driven from Swift concurrency (`AsyncBlobCache.startSet`): each call runs on
/// BlobCache's I/O queue. One caller at a time.
///
///     try await upload.append(part)
public struct AsyncPendingSet: Sendable {
    /// The synchronous set underneath.
    public let pending: PendingSet

    init(_ pending: PendingSet) { self.pending = pending }

    /// Takes the next bytes of the value; see `PendingSet.append(_:)`.
    ///
    ///     try await upload.append(part)
    public func append(_ bytes: [UInt8]) async throws {
        let pending = self.pending
        try await AsyncBlobCache.run { try pending.append(bytes) }
    }

    /// Stores the value; see `PendingSet.finish()`.
    ///
    ///     let id = try await upload.finish()
    @discardableResult
    public func finish() async throws -> BlobID {
        let pending = self.pending
        return try await AsyncBlobCache.run { try pending.finish() }
    }

    /// Abandons the set; see `PendingSet.cancel()`. It waits for pieces being written and
    /// deletes the staging file, on the I/O queue.
    ///
    ///     await upload.cancel()
    public func cancel() async {
        let pending = self.pending
        _ = try? await AsyncBlobCache.run { pending.cancel() }
    }
}

/// A stored value as an asynchronous sequence of checked chunks (`AsyncBlobCache.chunks(forKey:)`):
/// each chunk is read, checked and decoded on BlobCache's I/O queue when the consumer asks for
/// it. Damage found part way throws `corruptBlob` from the iterator, after the good chunks.
///
///     for try await chunk in value { try await send(chunk) }
public struct ValueChunks: AsyncSequence, Sendable {
    public typealias Element = [UInt8]

    /// The reader underneath.
    public let reader: ValueReader

    init(_ reader: ValueReader) { self.reader = reader }

    /// The value's length in bytes.
    public var length: Int { reader.length }

    /// Reads the chunks in order.
    public func makeAsyncIterator() -> Iterator { Iterator(reader: reader) }

    /// Reads the next chunk when asked.
    public struct Iterator: AsyncIteratorProtocol {
        let reader: ValueReader

        /// The next checked chunk, `nil` after the last.
        public mutating func next() async throws -> [UInt8]? {
            let reader = self.reader
            return try await AsyncBlobCache.run { try reader.next() }
        }
    }
}
