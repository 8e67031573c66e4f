import BlobCache
import HTTPTypes
import Prometheus
import Synchronization

/// What `GET /metrics` reports, in Prometheus' text format (swift-prometheus): the server's
/// requests, durations, bytes and connections, the cache hits and misses its requests met, and
/// the cache's evictions, entries and stored bytes as of the scrape.
///
///     metrics.record(method: "GET", status: 200, duration: elapsed, received: 0, sent: 4096, lookup: .hit)
///     let text = try metrics.exposition(cache: cache)
final class ServerMetrics: Sendable {
    let registry = PrometheusCollectorRegistry()
    private let hits: Counter
    private let misses: Counter
    private let received: Counter
    private let sent: Counter
    private let evictions: Counter
    private let entries: Gauge
    private let storedBytes: Gauge
    private let connections: Gauge
    private let openConnections = Atomic<Int>(0)
    /// The cache's eviction count at the last scrape (the counter moves by the difference).
    private let evictionsSeen = Mutex<Int?>(nil)
    private let durations: DurationHistogram

    /// What a GET or HEAD of a key found.
    enum Lookup { case hit, miss }

    init() {
        hits = registry.makeCounter(name: "blobcache_hits_total", help: "GET and HEAD requests of a key that found it.")
        misses = registry.makeCounter(name: "blobcache_misses_total", help: "GET and HEAD requests of a key that did not find it.")
        received = registry.makeCounter(name: "blobcache_http_received_bytes_total", help: "Request body bytes received.")
        sent = registry.makeCounter(name: "blobcache_http_sent_bytes_total", help: "Response body bytes sent.")
        evictions = registry.makeCounter(name: "blobcache_evictions_total", help: "Entries the cache evicted to stay under its caps.")
        entries = registry.makeGauge(name: "blobcache_entries", help: "Live entries in the cache.")
        storedBytes = registry.makeGauge(name: "blobcache_stored_bytes", help: "Bytes the cache's blobs take on disk.")
        connections = registry.makeGauge(name: "blobcache_http_open_connections", help: "Client connections open now.")
        durations = registry.makeDurationHistogram(
            name: "blobcache_http_request_duration_seconds",
            buckets: [.microseconds(500), .milliseconds(1), .milliseconds(5), .milliseconds(10), .milliseconds(50),
                      .milliseconds(100), .milliseconds(500), .seconds(1), .seconds(5), .seconds(30)],
            help: "Time from a request's head to the end of its reply.")
    }

    /// Counts one answered request.
    func record(method: HTTPRequest.Method, status: Int, duration: Duration, received: Int, sent: Int, lookup: Lookup?) {
        registry.makeCounter(name: "blobcache_http_requests_total", labels: [("method", Self.methodLabel(method)), ("status", String(status))],
                             help: "Requests answered, by method and status.").increment()
        durations.recordNanoseconds(Self.nanoseconds(duration))
        if received > 0 { self.received.increment(by: Int64(received)) }
        if sent > 0 { self.sent.increment(by: Int64(sent)) }
        switch lookup {
        case .hit: hits.increment()
        case .miss: misses.increment()
        case nil: break
        }
    }

    /// A connection opened (+1) or closed (-1).
    func connectionsChanged(by delta: Int) {
        let now = openConnections.add(delta, ordering: .relaxed).newValue
        connections.set(Double(now))
    }

    /// The text a scrape gets, with the cache's figures read now (blocking: call it on the disk queue).
    func exposition(cache: BlobCache) throws -> [UInt8] {
        let totals = try cache.totals()
        entries.set(Double(totals.entries))
        storedBytes.set(Double(totals.storedBytes))
        let evicted = cache.statistics().lifetime.evictions
        let delta = evictionsSeen.withLock { seen -> Int in
            defer { seen = evicted }
            return seen.map { evicted - $0 } ?? evicted
        }
        if delta > 0 { evictions.increment(by: Int64(delta)) }
        return registry.emitToBuffer()
    }

    /// Methods as labels: the ones the server knows by name, anything else as `other`, so a
    /// client cannot add label values without end.
    private static func methodLabel(_ method: HTTPRequest.Method) -> String {
        switch method {
        case .get, .head, .put, .delete, .post, .options, WebDAV.mkcol, WebDAV.propfind: method.rawValue
        default: "other"
        }
    }

    private static func nanoseconds(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    }
}
