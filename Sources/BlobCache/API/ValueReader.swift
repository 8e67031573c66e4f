import SystemPackage

/// A stored value read in checked chunks (`BlobCache.openValue(forKey:)`): each chunk is handed
/// on only once it has passed its checks (checksum, under a key its tag, decoding), so a
/// damaged value yields its good chunks and then throws `corruptBlob`, never a wrong byte. A
/// value set from a stream is read a piece (1 MiB) at a time from a file opened once, which a
/// removal meanwhile does not take away; any other value comes as one chunk, checked whole.
///
/// `length` is known before the first chunk (an HTTP server's `Content-Length`). One reader at
/// a time may call `next()`; it is `Sendable` so that it can move between tasks.
///
///     guard let reader = try cache.openValue(forKey: "video/42") else { return notFound() }
///     sendHead(contentLength: reader.length)
///     while let chunk = try reader.next() { try send(chunk) }
public final class ValueReader: Sendable {
    /// The value's length in bytes.
    public let length: Int
    private let state: Locked<ChunkedReadBox>
    private let cache: BlobCache
    /// The blob read (`nil` for a value from the remote tier) and `CacheState.releases` when
    /// its file was opened: what a damage report needs to drop the right entries.
    private let info: BlobInfo?
    private let releases: UInt64
    /// The file read, when it is a pieced blob's.
    private let file: FileIdentity?

    init(cache: BlobCache, read: ChunkedRead, info: BlobInfo?, releases: UInt64) {
        self.length = read.rawLength
        self.state = Locked(ChunkedReadBox(read: read))
        self.cache = cache
        self.info = info
        self.releases = releases
        self.file = read.file
    }

    /// The next checked chunk of the value, `nil` after the last (an empty value has none).
    /// Damage throws `corruptBlob` (and drops the value's entries); a failed read, `io`.
    ///
    ///     while let chunk = try reader.next() { try send(chunk) }
    public func next() throws -> [UInt8]? {
        let outcome = try state.withLock { box -> Result<[UInt8]?, BlobDamage> in
            guard let read = box.read else { return .success(nil) }
            let result = try read.next()
            if case .success(nil) = result { box.read = nil }
            if case .failure = result { box.read = nil }
            return result
        }
        switch outcome {
        case .success(let chunk): return chunk
        case .failure(let damage):
            guard let info else { throw BlobCacheError.corruptBlob(id: BlobID(high: 0, low: 0), path: "", reason: damage.detail) }
            throw cache.engine.streamedReadFailed(info, releases: releases, file: file, damage: damage)
        }
    }

    /// Calls `body` with each remaining chunk, in order.
    ///
    ///     try reader.forEachChunk { try socket.send($0) }
    public func forEachChunk(_ body: (UnsafeRawBufferPointer) throws -> Void) throws {
        while let chunk = try next() { try chunk.withUnsafeBytes(body) }
    }

    /// Writes the remaining chunks to `destination` from where it stands. A write error throws
    /// `io` (operation `write`, path `destination`).
    ///
    ///     try reader.write(to: .standardOutput)
    public func write(to destination: FileDescriptor) throws {
        try forEachChunk { chunk in
            do { _ = try destination.writeAll(chunk) } catch {
                throw BlobCacheError.io(operation: "write", path: "destination", errno: error as? Errno ?? .ioError)
            }
        }
    }

    /// Whether the value was read and checked whole when the reader was opened (a packed blob,
    /// or one in a whole-value format): its one chunk is already in memory.
    package var isWhole: Bool { state.withLock { $0.read?.isWhole ?? false } }

    /// Stops reading early: the file is closed now rather than when the reader goes away.
    ///
    ///     reader.close()
    public func close() {
        state.withLock { $0.read = nil }
    }
}

/// The reader's mutable part, behind its mutex.
struct ChunkedReadBox: @unchecked Sendable {
    var read: ChunkedRead?
}
