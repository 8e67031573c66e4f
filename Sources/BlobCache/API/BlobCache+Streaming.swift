import SystemPackage
// The streaming calls take and give swift-system's `FileDescriptor`: `import BlobCache` is
// enough to call them.
@_exported import struct SystemPackage.FileDescriptor

extension BlobCache {
    // MARK: Setting a value from a stream

    /// Starts a set whose value arrives in parts (`PendingSet`): memory stays bounded by a
    /// piece (1 MiB) whatever the value's size.
    ///
    ///     let upload = try cache.startSet(forKey: "video/42")
    ///     try upload.append(part)
    ///     try upload.finish()
    public func startSet(forKey key: String, expiry: Expiry? = nil, pinned: Bool = false) throws -> PendingSet {
        try Self.validate(key)
        return try startSet(forRawKey: key, expiry: expiry, pinned: pinned)
    }

    /// `startSet` of a key already validated (and made raw by a namespace).
    func startSet(forRawKey key: String, expiry: Expiry?, pinned: Bool) throws -> PendingSet {
        // The tighter of the cache's cap and its namespace's: a larger value could never be stored.
        let limit = try engine.read(.thisOpen) { .answer($0.storedBytesLimit(forKey: key)) }
        return PendingSet(cache: self, key: key, expiry: expiry ?? defaultExpiry, pinned: pinned, limit: limit)
    }

    /// Stores everything `source` gives until its end (a file, a pipe, a socket, `/dev/null`)
    /// under `key`, in bounded memory, and returns the value's id. A value over the byte cap
    /// throws `valueTooLarge` as soon as its stored bytes pass the cap, having read no further
    /// and stored nothing. A read error throws `io` (operation `read`, path `source`). The
    /// descriptor is read from where it stands and left open.
    ///
    ///     let fd = try FileDescriptor.open("model.bin", .readOnly)
    ///     defer { try? fd.close() }
    ///     try cache.set(contentsOf: fd, forKey: "model/7")
    @discardableResult
    public func set(contentsOf source: FileDescriptor, forKey key: String, expiry: Expiry? = nil,
                    pinned: Bool = false) throws -> BlobID {
        try Self.validate(key)
        return try set(contentsOf: source, forRawKey: key, expiry: expiry, pinned: pinned)
    }

    /// `set(contentsOf:forKey:)` of a raw key (a namespace's, or the cache's own).
    func set(contentsOf source: FileDescriptor, forRawKey key: String, expiry: Expiry?, pinned: Bool) throws -> BlobID {
        let pending = try startSet(forRawKey: key, expiry: expiry, pinned: pinned)
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: Self.streamChunk, alignment: 16)
        defer { buffer.deallocate() }
        while true {
            let count: Int
            do { count = try source.read(into: buffer) } catch {
                pending.cancel()
                throw BlobCacheError.io(operation: "read", path: "source", errno: error as? Errno ?? .ioError)
            }
            if count == 0 { break }
            try pending.append(UnsafeRawBufferPointer(rebasing: buffer[..<count]))
        }
        return try pending.finish()
    }

    /// How much a streamed set reads, or a streamed get writes, at a time.
    static let streamChunk = 1 << 20

    /// Links `key` to a value a `PendingSet` wrote as a pieced blob (sharing the stored copy
    /// of the same bytes, if any) and sends it to the remote tier.
    func publishStreamed(info: BlobInfo, staged: StagedLooseBlob, key: String, expiry: Expiry, pinned: Bool) throws -> BlobID {
        let start = telemetry.startTime
        defer { telemetry.finished(set: true, key: key, since: start) }
        try engine.publishStreamed(info: info, staged: staged, key: key, expiry: expiry, pinned: pinned)
        if let remote {
            let deadline = expiry.deadline(from: Nanoseconds.from(clock.now()))
            // The remote tier's queue holds values whole: one larger than it is dropped (and
            // counted) without being read back.
            if info.rawLength <= remote.queueLimit, let value = try? bytes(for: info.id) {
                value.withUnsafeBytes { remote.send($0, id: info.id, key: key, expiry: deadline) }
            } else {
                remote.countDroppedWrite()
            }
        }
        return info.id
    }

    // MARK: Reading a value as a stream

    /// Opens the value under `key` for reading in checked chunks, in memory bounded by a
    /// piece; `nil` for a miss. See `ValueReader`.
    ///
    ///     guard let reader = try cache.openValue(forKey: "video/42") else { return }
    ///     while let chunk = try reader.next() { send(chunk) }
    public func openValue(forKey key: String) throws -> ValueReader? {
        try openValue(forRawKey: key)
    }

    /// `openValue(forKey:)` of a raw key (a namespace's, or the cache's own).
    func openValue(forRawKey key: String) throws -> ValueReader? {
        let start = telemetry.startTime
        defer { telemetry.finished(set: false, key: key, since: start) }
        switch try engine.openValue(forKey: key) {
        case .gone: return nil
        case .miss:
            guard remote != nil, let value = try remoteValue(forRawKey: key) else { return nil }
            return ValueReader(cache: self, read: .whole(value), info: nil, releases: 0)
        case .whole(let value, let info): return ValueReader(cache: self, read: .whole(value), info: info, releases: 0)
        case .chunks(let read, let info, let releases): return ValueReader(cache: self, read: read, info: info, releases: releases)
        }
    }

    /// Calls `body` with each checked chunk of the value under `key`, in order, in bounded
    /// memory; `false` for a miss. Damage found part way throws `corruptBlob` after the chunks
    /// before it were given (and drops the value's entries, as any read of a damaged blob does):
    /// a caller that must not keep a partial value discards what it received.
    ///
    ///     let found = try cache.forEachChunk(forKey: "video/42") { try socket.send($0) }
    public func forEachChunk(forKey key: String, _ body: (UnsafeRawBufferPointer) throws -> Void) throws -> Bool {
        guard let reader = try openValue(forKey: key) else { return false }
        try reader.forEachChunk(body)
        return true
    }

    /// Writes the value under `key` to `destination` from where it stands, in bounded memory;
    /// `false` for a miss (nothing written). A write error throws `io` (operation `write`, path
    /// `destination`); damage part way throws `corruptBlob` after the bytes before it were
    /// written (truncate a file you opened for it, as the CLI does). The descriptor is left open.
    ///
    ///     let out = try FileDescriptor.open("copy.bin", .writeOnly, options: [.create, .truncate], permissions: .ownerReadWrite)
    ///     defer { try? out.close() }
    ///     let found = try cache.write(forKey: "video/42", to: out)
    public func write(forKey key: String, to destination: FileDescriptor) throws -> Bool {
        guard let reader = try openValue(forKey: key) else { return false }
        try reader.write(to: destination)
        return true
    }
}
