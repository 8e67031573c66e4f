import Dispatch
import Logging
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The second tier: reads that miss locally ask the remote store, and sets and removes reach it
/// through a bounded write-behind queue. A failing remote never fails a local operation: the
/// failure is logged and counted, and the remote is skipped for `backoff` (a circuit breaker).
final class RemoteTier: Sendable {
    let store: any RemoteStore
    private let backoff: Duration
    private let queueLimit: Int
    private let codec: Codec
    private let clock: any CacheClock
    private let logger: Logger
    private let state = Locked(State())
    /// Delivers queued writes one at a time, in the order they were made.
    private let worker = DispatchQueue(label: "BlobCache.remote.writes")
    /// Entered per queued write, left when it is delivered or dropped: `flush` waits on it.
    private let pending = DispatchGroup()

    /// Values above this are looked for before they are sent (a round trip costs less than
    /// sending them again); smaller ones are just sent, a PUT being idempotent.
    static let existenceCheckThreshold = 64 << 10

    private struct State {
        var counters = RemoteCounters()
        /// While set and in the future, the remote is not asked.
        var downUntil: Date?
        /// Bytes of values waiting in the queue.
        var queuedBytes = 0
    }

    /// A value the remote had for a key, checked.
    struct Found {
        let value: [UInt8]
        let id: BlobID
        /// Nanoseconds since 1970; `Nanoseconds.never` for none.
        let expiry: Int64
    }

    init(store: any RemoteStore, backoff: Duration, queueLimit: Int, codec: Codec, clock: any CacheClock, logger: Logger) {
        self.store = store
        self.backoff = backoff
        self.queueLimit = queueLimit
        self.codec = codec
        self.clock = clock
        self.logger = logger
    }

    var counters: RemoteCounters { state.withLock { $0.counters } }

    // MARK: Reads

    /// The value the remote holds for `key`, unexpired and checked; `nil` on a miss, on damage
    /// (`rejected`) and while the remote is skipped. `maxValueBytes`: larger values are not
    /// fetched (the local caps apply to what the remote returns).
    func value(forKey key: String, maxValueBytes: Int?) -> Found? {
        guard let recordBytes = call({ try store.get(.key(key)) }) else { return nil }
        guard let recordBytes else { return count(\.misses) }
        note(read: recordBytes.count)
        guard let record = RemoteKeyRecord.decode(recordBytes), record.key == key else {
            return reject("key record of '\(key)' is damaged or names another key")
        }
        guard record.expiry > Nanoseconds.from(clock.now()) else { return count(\.misses) }
        guard let value = value(for: record.id, maxValueBytes: maxValueBytes) else { return nil }
        return Found(value: value, id: record.id, expiry: record.expiry)
    }

    /// The blob with id `id` from the remote, checked against the id; `nil` as above.
    func value(for id: BlobID, maxValueBytes: Int?) -> [UInt8]? {
        guard let image = call({ try store.get(.blob(id)) }) else { return nil }
        guard let image else { return count(\.misses) }
        note(read: image.count)
        let decoded: [UInt8]? = image.withUnsafeBytes { bytes in
            guard case .success(let header) = LooseBlobFormat.parseHeader(bytes),
                  header.rawLength <= maxValueBytes ?? BlobInfo.maxLength,
                  case .success(let value) = LooseBlobFormat.decode(file: bytes, expecting: nil) else { return nil }
            return value
        }
        guard let decoded, BlobID(hashing: decoded) == id else {
            return reject("blob \(id.hex) is damaged, too large for the local caps, or not the value its id names")
        }
        state.withLock { $0.counters.hits += 1 }
        return decoded
    }

    // MARK: Writes

    /// Queues `value` (whose id is `id`) to be sent, with a record for `key` unless it is `nil`
    /// (a content-addressed value). Dropped, and counted, when the queue is full.
    func send(_ value: [UInt8], id: BlobID, key: String?, expiry: Int64) {
        enqueue(bytes: value.count) { [self] in
            if value.count > Self.existenceCheckThreshold, try store.exists(.blob(id)) {
            } else {
                let image = value.withUnsafeBytes {
                    PreparedBlob.encoding($0, id: id, codec: codec, packThreshold: 0).withImage { Array($0) }
                }
                try store.put(.blob(id), bytes: image, expiresAt: nil)
                note(written: image.count)
            }
            guard let key else { return }
            let record = RemoteKeyRecord(key: key, id: id, expiry: expiry).encoded
            try store.put(.key(key), bytes: record, expiresAt: expiry == Nanoseconds.never ? nil : Nanoseconds.date(expiry))
            note(written: record.count)
        }
    }

    /// Queues the removal of `key`'s record, so that other caches no longer find it.
    func sendRemoval(ofKey key: String) {
        enqueue(bytes: 0) { [self] in try store.delete(.key(key)) }
    }

    /// Waits until every write queued so far is delivered or dropped.
    func flush() { pending.wait() }

    private func enqueue(bytes: Int, _ delivery: @escaping @Sendable () throws -> Void) {
        let admitted = state.withLock { state in
            guard state.queuedBytes + bytes <= queueLimit else {
                state.counters.droppedWrites += 1
                return false
            }
            state.queuedBytes += bytes
            return true
        }
        guard admitted else {
            logger.debug("remote write dropped: the queue is full", metadata: ["remote": "\(store)"])
            return
        }
        pending.enter()
        worker.async { [self] in
            defer {
                state.withLock { $0.queuedBytes -= bytes }
                pending.leave()
            }
            if call(reading: false, delivery) != nil {
                state.withLock { $0.counters.writes += 1 }
            } else {
                state.withLock { $0.counters.droppedWrites += 1 }
            }
        }
    }

    // MARK: The circuit breaker

    /// Runs `body` against the remote unless it failed within `backoff`; a failure opens the
    /// circuit. `nil`: skipped or failed.
    private func call<T>(reading: Bool = true, _ body: () throws -> T) -> T? {
        let now = clock.now()
        let skipping = state.withLock { state -> Bool in
            guard let until = state.downUntil, now < until else { return false }
            if reading { state.counters.skippedReads += 1 }
            return true
        }
        if skipping { return nil }
        do {
            let result = try body()
            let recovered = state.withLock { state in
                defer { state.downUntil = nil }
                return state.downUntil != nil
            }
            if recovered { logger.notice("remote store reachable again", metadata: ["remote": "\(store)"]) }
            return result
        } catch {
            let seconds = Double(backoff.components.seconds) + Double(backoff.components.attoseconds) / 1e18
            state.withLock { state in
                state.counters.errors += 1
                state.downUntil = clock.now().addingTimeInterval(seconds)
            }
            logger.warning("remote store failed; skipped for \(backoff)",
                           metadata: ["remote": "\(store)", "error": "\(error)"])
            return nil
        }
    }

    private func count<T>(_ counter: WritableKeyPath<RemoteCounters, Int>) -> T? {
        state.withLock { $0.counters[keyPath: counter] += 1 }
        return nil
    }

    private func reject<T>(_ reason: String) -> T? {
        logger.warning("remote value rejected", metadata: ["remote": "\(store)", "reason": "\(reason)"])
        return count(\.rejected)
    }

    private func note(read bytes: Int) { state.withLock { $0.counters.bytesRead += bytes } }
    private func note(written bytes: Int) { state.withLock { $0.counters.bytesWritten += bytes } }
}
