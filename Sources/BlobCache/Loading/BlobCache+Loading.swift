extension BlobCache {
    /// The value under `key`, loading it with `load` when it is missing: single-flight
    /// read-through. However many callers ask for the same missing key at once, `load` runs
    /// once; its result is stored (with `expiry`, else the default) and handed to every one of
    /// them. An error thrown by `load` reaches every waiter and stores nothing. A caller that is
    /// cancelled stops waiting (with `CancellationError`) without cancelling the load for the others.
    ///
    /// A memory-tier hit returns on the caller's thread; everything that touches a file runs
    /// on BlobCache's I/O queue (see `AsyncBlobCache`), never on Swift's cooperative pool, and
    /// `load` runs in a task of its own.
    ///
    ///     let avatar = try await cache.value(forKey: "avatar/42", expiry: .after(.seconds(3_600))) {
    ///         try await download(avatarURL)
    ///     }
    public func value(forKey key: String, expiry: Expiry? = nil,
                      loadingWith load: @escaping @Sendable () async throws -> [UInt8]) async throws -> [UInt8] {
        try Self.validate(key)
        return try await value(forRawKey: key, expiry: expiry, loadingWith: load)
    }

    /// `value(forKey:expiry:loadingWith:)` for a key already validated (and made raw by a namespace).
    ///
    /// Joined before the disk is read: the flight reads it (once for all its callers, counting
    /// one hit or one miss) and loads only on a miss, so no caller can start a second load
    /// between another flight's read and its end.
    func value(forRawKey key: String, expiry: Expiry?,
               loadingWith load: @escaping @Sendable () async throws -> [UInt8]) async throws -> [UInt8] {
        if let remembered = memoryValue(forRawKey: key) { return remembered }
        let (flight, isNew) = flights.flight(for: key)
        if isNew {
            Task {
                let result = await Result { try await self.loadAndStore(key: key, expiry: expiry, load: load) }
                // Forgotten before it is finished: a caller from now on finds the stored value.
                self.flights.end(flight, for: key)
                flight.finish(result)
            }
        }
        return try await flight.wait()
    }

    /// The flight's work: the stored value, else `load`'s, stored.
    private func loadAndStore(key: String, expiry: Expiry?,
                              load: @Sendable () async throws -> [UInt8]) async throws -> [UInt8] {
        if let stored = try await AsyncBlobCache.run({ try self.bytes(forRawKey: key) }) { return stored }
        let value = try await load()
        try await AsyncBlobCache.run {
            _ = try self.set(value, forRawKey: key, expiry: expiry, pinned: false, remembering: self.engine.remembersValues)
        }
        return value
    }
}

extension Result where Failure == any Error {
    /// The result of an `async` throwing body.
    init(catching body: () async throws -> Success) async {
        do { self = .success(try await body()) } catch { self = .failure(error) }
    }
}
