import Logging
import CoreMetrics
import Metrics
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Where the cache reports: its `Logger` (recovery events at `notice` and `warning`, nothing
/// per operation above `debug`) and, when the application bootstrapped swift-metrics (or the
/// configuration names a factory), counters and timers labelled by namespace.
///
/// The library never bootstraps either system. Without metrics, every call here is one
/// branch on `nil`.
struct Telemetry: Sendable {
    let logger: Logger
    let metrics: CacheMetrics?

    /// No logging, no metrics (tests and tools that build an engine by hand).
    static let disabled = Telemetry(logger: Logger(label: "blobcache", factory: { _ in SwiftLogNoOpLogHandler() }), metrics: nil)

    /// Reports to `logger`, and to `factory` (the bootstrapped one when `nil`) unless that is
    /// swift-metrics' no-op default, which would make every operation pay for nothing.
    init(logger: Logger, factory: (any MetricsFactory)?) {
        self.logger = logger
        let factory = factory ?? MetricsSystem.factory
        metrics = factory is NOOPMetricsHandler ? nil : CacheMetrics(factory: factory)
    }

    private init(logger: Logger, metrics: CacheMetrics?) {
        self.logger = logger
        self.metrics = metrics
    }

    func hit(key: String, bytes: Int, fromMemory: Bool) {
        guard let metrics else { return }
        let set = metrics.instruments(forKey: key)
        set.hits.increment()
        if fromMemory { set.memoryHits.increment() }
        set.bytesRead.increment(by: bytes)
    }

    func missed(key: String) {
        metrics?.instruments(forKey: key).misses.increment()
    }

    func dedupedSet(key: String) {
        metrics?.instruments(forKey: key).dedupedSets.increment()
    }

    func refusedCollision(key: String) {
        metrics?.instruments(forKey: key).contentCollisions.increment()
    }

    func wroteBlob(key: String, bytes: Int) {
        metrics?.instruments(forKey: key).bytesWritten.increment(by: bytes)
    }

    func evicted(key: String) {
        metrics?.instruments(forKey: key).evictions.increment()
    }

    /// Now, in nanoseconds, when a timer will want it (0 otherwise: no clock read).
    var startTime: UInt64 { metrics == nil ? 0 : Self.monotonicNanoseconds() }

    /// Records a `get` (`set: false`) or `set` that began at `start` (from `startTime`).
    func finished(set: Bool, key: String, since start: UInt64) {
        guard let metrics else { return }
        let elapsed = Self.monotonicNanoseconds() &- start
        let instruments = metrics.instruments(forKey: key)
        (set ? instruments.setDuration : instruments.getDuration).recordNanoseconds(Int64(truncatingIfNeeded: elapsed))
    }

    static func monotonicNanoseconds() -> UInt64 {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
    }
}

/// The swift-metrics instruments, one set per namespace (`""` for keys of none), made once.
final class CacheMetrics: Sendable {
    /// One namespace's counters and timers.
    struct Instruments: Sendable {
        let hits, misses, memoryHits, dedupedSets, contentCollisions, evictions, bytesRead, bytesWritten: Counter
        let getDuration, setDuration: CoreMetrics.Timer

        init(namespace: String, factory: any MetricsFactory) {
            let dimensions = [("namespace", namespace)]
            func counter(_ name: String) -> Counter { Counter(label: "blobcache.\(name)", dimensions: dimensions, factory: factory) }
            hits = counter("hits")
            misses = counter("misses")
            memoryHits = counter("memory_hits")
            dedupedSets = counter("deduped_sets")
            contentCollisions = counter("content_collisions")
            evictions = counter("evictions")
            bytesRead = counter("bytes_read")
            bytesWritten = counter("bytes_written")
            getDuration = CoreMetrics.Timer(label: "blobcache.get.duration", dimensions: dimensions, factory: factory)
            setDuration = CoreMetrics.Timer(label: "blobcache.set.duration", dimensions: dimensions, factory: factory)
        }
    }

    private let factory: any MetricsFactory
    private let byNamespace: Locked<[ExactKey: Instruments]>

    init(factory: any MetricsFactory) {
        self.factory = factory
        byNamespace = Locked([ExactKey(""): Instruments(namespace: "", factory: factory)])
    }

    /// The instruments of the namespace `key` (raw) belongs to.
    func instruments(forKey key: String) -> Instruments {
        instruments(forNamespace: NamespaceKey.prefix(ofRawKey: key).map(NamespaceKey.name(ofPrefix:)) ?? "")
    }

    func instruments(forNamespace name: String) -> Instruments {
        byNamespace.withLock { known in
            if let instruments = known[ExactKey(name)] { return instruments }
            let made = Instruments(namespace: name, factory: factory)
            known[ExactKey(name)] = made
            return made
        }
    }
}

extension Telemetry {
    /// Logs what opening the cache found and repaired (nothing for a clean open).
    func logOpen(_ report: BlobCache.OpenReport, directory: String) {
        // Each message's metadata is an autoclosure, built only when the message is logged: a
        // clean open builds no `Logger.Metadata`, a `Dictionary` keyed by `String` (a process's
        // first one makes the Swift runtime scan every protocol conformance in the process).
        switch report.recovery {
        case .none:
            break
        case .truncatedTornTail(let offset, let bytesCut):
            logger.notice("journal torn tail cut off (a writer died mid-append)",
                          metadata: ["directory": "\(directory)", "offset": "\(offset)", "bytesCut": "\(bytesCut)"])
        case .stoppedAtCorruption(let offset, let reason):
            logger.warning("journal damaged: replay stopped at the damage and the journal was rewritten",
                           metadata: ["directory": "\(directory)", "offset": "\(offset)", "reason": "\(reason)"])
        case .rebuiltFromBlobs(let reason, let adopted, let removed):
            logger.warning("journal header lost: index rebuilt from the blobs, keys lost",
                           metadata: ["directory": "\(directory)", "reason": "\(reason)", "adopted": "\(adopted)",
                                      "removed": "\(removed)"])
        }
        if report.expiredAtOpen > 0 || report.evictedAtOpen > 0 {
            logger.debug("open dropped entries", metadata: ["expired": "\(report.expiredAtOpen)", "evicted": "\(report.evictedAtOpen)"])
        }
        logger.debug("opened", metadata: ["directory": "\(directory)", "replayedRecords": "\(report.replayedRecords)",
                                          "fromSnapshot": "\(report.restoredFromSnapshot)"])
    }
}
