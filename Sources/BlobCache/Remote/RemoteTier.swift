import Crypto
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
    let queueLimit: Int
    private let codec: Codec
    private let clock: any CacheClock
    private let logger: Logger
    /// The remote authentication key (`Configuration.remoteAuthenticationKey`): records are
    /// written tagged under it, and only records whose tag verifies are used.
    private let authentication: SymmetricKey?
    private let state = Locked(State())
    /// Delivers queued writes one at a time, in the order they were made; `flush` waits for
    /// what it holds by queueing an empty item behind it.
    private let worker = DispatchQueue(label: "BlobCache.remote.writes")

    /// Values above this are looked for before they are sent (a round trip costs less than
    /// sending them again); smaller ones are just sent, a PUT being idempotent.
    static let existenceCheckThreshold = 64 << 10
    /// The largest value taken from a remote when the local cache has no byte cap: a hostile
    /// server cannot make a read allocate more (a payload decodes to at most 1,032 times its size).
    static let largestValue = 1 << 30
    /// What a queued removal counts against `remoteQueueLimit`, so their number is bounded too.
    static let removalCost = 256

    private struct State {
        var counters = RemoteCounters()
        /// While set and in the future, the remote is not asked.
        var downUntil: Date?
        /// Bytes of values waiting in the queue.
        var queuedBytes = 0
        /// Keys with a set or remove waiting in the queue, and how many: the remote is not asked
        /// for them, since what it holds is about to change (a removed key would come back).
        var queuedKeys: [ExactKey: Int] = [:]
    }

    /// A value the remote had for a key, checked.
    struct Found {
        let value: [UInt8]
        let id: BlobID
        /// Nanoseconds since 1970; `Nanoseconds.never` for none.
        let expiry: Int64
    }

    init(store: any RemoteStore, backoff: Duration, queueLimit: Int, codec: Codec, clock: any CacheClock, logger: Logger,
         authentication: SymmetricKey? = nil) {
        self.store = store
        self.authentication = authentication
        self.backoff = backoff
        self.queueLimit = queueLimit
        self.codec = codec
        self.clock = clock
        self.logger = logger
    }

    var counters: RemoteCounters { state.withLock { $0.counters } }

    /// Sets every count to zero (`BlobCache.resetStatistics()`).
    func resetCounters() { state.withLock { $0.counters = RemoteCounters() } }

    // MARK: Reads

    /// The value the remote holds for `key`, unexpired and checked; `nil` on a miss, on damage
    /// (`rejected`) and while the remote is skipped. `maxValueBytes`: larger values are not
    /// fetched (the local caps apply to what the remote returns).
    func value(forKey key: String, maxValueBytes: Int?) -> Found? {
        guard state.withLock({ $0.queuedKeys[ExactKey(key)] == nil }) else { return nil }
        guard let recordBytes = call({ try store.get(.key(key)) }) else { return nil }
        guard let recordBytes else { return count(\.misses) }
        note(read: recordBytes.count)
        let record: RemoteKeyRecord
        switch RemoteKeyRecord.decode(recordBytes, authenticatingWith: authentication) {
        case .success(let decoded): record = decoded
        case .failure(.unauthenticated): return reject("key record of '\(key)' carries no valid authentication tag")
        case .failure(.damaged): return reject("key record of '\(key)' is damaged")
        }
        guard record.key.utf8.elementsEqual(key.utf8) else { return reject("key record of '\(key)' names another key") }
        guard record.expiry > Nanoseconds.from(clock.now()) else { return count(\.misses) }
        guard let value = blob(record.id, maxValueBytes: maxValueBytes) else { return nil }
        if let digest = record.sha256, !Array(SHA256.hash(data: value)).elementsEqual(digest) {
            return reject("blob \(record.id.hex) holds another value with the same MD5 as the one key '\(key)' names")
        }
        state.withLock { $0.counters.hits += 1 }
        return Found(value: value, id: record.id, expiry: record.expiry)
    }

    /// The blob with id `id` from the remote, checked against the id; `nil` as above. With an
    /// authentication key the remote is not asked: no record vouches for which of the values
    /// with that MD5 is meant, and anyone who can write the server could store another one.
    func value(for id: BlobID, maxValueBytes: Int?) -> [UInt8]? {
        guard authentication == nil, let value = blob(id, maxValueBytes: maxValueBytes) else { return nil }
        state.withLock { $0.counters.hits += 1 }
        return value
    }

    /// The blob with id `id` from the remote, checked against the id (not counted as a hit).
    private func blob(_ id: BlobID, maxValueBytes: Int?) -> [UInt8]? {
        guard let image = call({ try store.get(.blob(id)) }) else { return nil }
        guard let image else { return count(\.misses) }
        note(read: image.count)
        let decoded: [UInt8]? = image.withUnsafeBytes { bytes in
            guard case .success(let header) = LooseBlobFormat.parseHeader(bytes),
                  header.rawLength <= min(maxValueBytes ?? Self.largestValue, Self.largestValue),
                  case .success(let value) = LooseBlobFormat.decode(file: bytes, expecting: nil, cipher: nil) else { return nil }
            return value
        }
        guard let decoded, BlobID(hashing: decoded) == id else {
            return reject("blob \(id.hex) is damaged, too large for the local caps, or not the value its id names")
        }
        return decoded
    }

    // MARK: Writes

    /// Queues a copy of `raw` (whose id is `id`) to be sent, with a record for `key` unless it
    /// is `nil` (a content-addressed value). Dropped, and counted, when the queue is full.
    func send(_ raw: UnsafeRawBufferPointer, id: BlobID, key: String?, expiry: Int64) {
        guard admit(bytes: raw.count, key: key) else { return }
        let value = Array(raw)
        deliver(bytes: value.count, key: key) { [self] in
            if value.count > Self.existenceCheckThreshold, try store.exists(.blob(id)) {
            } else {
                let image = value.withUnsafeBytes {
                    PreparedBlob.encoding($0, id: id, codec: codec, packThreshold: 0, cipher: nil).withImage { Array($0) }
                }
                try store.put(.blob(id), bytes: image, expiresAt: nil)
                note(written: image.count)
            }
            guard let key else { return }
            let digest = Array(SHA256.hash(data: value))
            let record = RemoteKeyRecord(key: key, id: id, expiry: expiry, sha256: digest).encoded(authenticatingWith: authentication)
            try store.put(.key(key), bytes: record, expiresAt: expiry == Nanoseconds.never ? nil : Nanoseconds.date(expiry))
            note(written: record.count)
        }
    }

    /// Queues the removal of `key`'s record, so that other caches no longer find it.
    func sendRemoval(ofKey key: String) {
        guard admit(bytes: Self.removalCost, key: key) else { return }
        deliver(bytes: Self.removalCost, key: key) { [self] in try store.delete(.key(key)) }
    }

    /// Waits until every write queued before the call is delivered or dropped.
    func flush() { worker.sync {} }

    /// Takes `bytes` of the queue (and notes `key` as changing), or counts a dropped write.
    /// Counts a write that was never queued: a streamed value larger than the whole queue.
    func countDroppedWrite() {
        state.withLock { $0.counters.droppedWrites += 1 }
        logger.debug("remote write dropped: the value is larger than the queue", metadata: ["remote": "\(store)"])
    }

    private func admit(bytes: Int, key: String?) -> Bool {
        let admitted = state.withLock { state in
            guard state.queuedBytes + bytes <= queueLimit else {
                state.counters.droppedWrites += 1
                return false
            }
            state.queuedBytes += bytes
            if let key { state.queuedKeys[ExactKey(key), default: 0] += 1 }
            return true
        }
        if !admitted { logger.debug("remote write dropped: the queue is full", metadata: ["remote": "\(store)"]) }
        return admitted
    }

    /// Runs an admitted write on the worker, then gives back its bytes and key.
    private func deliver(bytes: Int, key: String?, _ delivery: @escaping @Sendable () throws -> Void) {
        worker.async { [self] in
            defer {
                state.withLock { state in
                    state.queuedBytes -= bytes
                    if let key {
                        state.queuedKeys[ExactKey(key), default: 1] -= 1
                        if state.queuedKeys[ExactKey(key)] == 0 { state.queuedKeys[ExactKey(key)] = nil }
                    }
                }
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
