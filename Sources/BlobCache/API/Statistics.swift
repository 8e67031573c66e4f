extension BlobCache {
    /// How the cache has been used: hits, misses, memory hits, sets, evictions, bytes moved.
    /// The counts read directly (`stats.hits`) are this open's; `lifetime` adds those of every
    /// other open that had closed cleanly when they were first asked for (saved in `DIR/stats`).
    ///
    ///     let stats = cache.statistics()
    ///     print(stats.hits, stats.misses, stats.hitRatio, stats.lifetime.hits)
    @dynamicMemberLookup
    public struct Statistics: Sendable, Equatable {
        /// Counts since this `BlobCache` was opened.
        public var sinceOpen: Counters
        /// Counts over the cache's life: other opens' saved counts plus this open's.
        public var lifetime: Counters
        /// What the remote tier did since this open (all zero without one).
        public var remote = RemoteCounters()

        /// A count since this open, by name: `stats.hits`, `stats.hitRatio`, `stats.bytesRead`.
        ///
        ///     let ratio = cache.statistics().hitRatio
        public subscript<Value>(dynamicMember keyPath: KeyPath<Counters, Value>) -> Value {
            sinceOpen[keyPath: keyPath]
        }
    }

    /// Hits, misses, memory hits, sets, deduplicated sets, evictions, expirations and bytes
    /// read and written: since this open, and for the cache's lifetime. After `close()` it
    /// keeps answering with the figures at the close.
    ///
    ///     let stats = cache.statistics()
    ///     print("hit ratio \(stats.hitRatio), \(stats.memoryHits) from memory")
    public func statistics() -> Statistics {
        let remote = remote?.counters ?? RemoteCounters()
        // Open first: the close keeps its figures before it leaves the engine closed.
        var statistics: Statistics
        if let open = engine.statisticsIfOpen {
            statistics = open
            // Taken into the engine's counts at the close (`Engine.close`), to be saved.
            statistics.sinceOpen.remoteRejections = remote.rejected
            statistics.lifetime.remoteRejections.addSaturating(remote.rejected)
        } else {
            statistics = engine.finalStatistics.withLock { $0 }
        }
        statistics.remote = remote
        return statistics
    }
}

extension BlobCache {
    /// Sets every statistic to zero: this open's, and the lifetime counts saved in `DIR/stats`
    /// (as `ccache -z` does). Entries are untouched. Other opens running meanwhile keep what
    /// they counted and add it to `DIR/stats` when they close.
    ///
    ///     try cache.resetStatistics()
    public func resetStatistics() throws {
        try engine.write(committing: false) { writer in
            try writer.resetCounters()
            remote?.resetCounters()
        }
    }
}
