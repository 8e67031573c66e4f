#if BLOBCACHE_TESTING
extension Engine {
    /// Runs `body` on the cache state as an operation that writes (under the lock and the
    /// flock, caught up, through the commit path): for tests that look inside or drive one
    /// maintenance step at a time. Only in builds with `BLOBCACHE_TESTING` (debug, fuzzing).
    ///
    ///     let dead = try cache.engine.withState { $0.deadPackBytes }
    func withState<T>(_ body: (CacheState) throws -> T) throws -> T {
        try write { try body($0.state) }
    }
}
#endif
