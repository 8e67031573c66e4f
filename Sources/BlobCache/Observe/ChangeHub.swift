import Synchronization

/// The consumers of `BlobCache.changes(forKeysWithPrefix:)` and the delivery of changes to them.
///
/// Delivery never waits: each consumer's stream buffers at most `bufferLimit` changes and,
/// when it falls behind, loses the oldest. Changes are delivered in the order the cache made
/// them (the engine's operations publish them while still holding the cache's lock).
final class ChangeHub: Sendable {
    /// Changes a consumer that falls behind may have waiting before the oldest are dropped.
    static let bufferLimit = 1024

    private struct Consumer {
        /// Raw keys it wants start with these bytes (compared as bytes, as the index compares keys).
        let prefix: [UInt8]
        /// Bytes of the raw key that are the namespace's, dropped from what it is given.
        let namespaceBytes: Int
        let continuation: AsyncStream<BlobCache.Change>.Continuation
    }

    /// The consumers by id. A struct of its own, so that creating the hub (at every open)
    /// instantiates no `Dictionary` type: a process's first one keyed by `Int` makes the Swift
    /// runtime scan every protocol conformance in the process for `Int: Hashable`.
    private struct Consumers {
        var byID = [Int: Consumer]()   // not `[:]`, whose initializer instantiates the storage type
    }

    private let consumers = Locked(Consumers())
    private let consumerCount = Atomic<Int>(0)
    /// The id of the next consumer.
    private let lastID = Atomic<Int>(0)

    /// Whether anyone is listening (the engine records changes only then): one atomic load.
    var isObserved: Bool { consumerCount.load(ordering: .acquiring) > 0 }

    /// A new stream of the changes to raw keys starting with `namespace + prefix` (raw keys of
    /// other namespaces and content-addressed entries are never given to a cache-wide consumer),
    /// and a call to make when it ends.
    func subscribe(namespace: [UInt8]?, prefix: String) -> AsyncStream<BlobCache.Change> {
        let (stream, continuation) = AsyncStream<BlobCache.Change>.makeStream(bufferingPolicy: .bufferingNewest(Self.bufferLimit))
        let id = lastID.add(1, ordering: .relaxed).newValue
        let consumer = Consumer(prefix: (namespace ?? []) + Array(prefix.utf8), namespaceBytes: namespace?.count ?? 0,
                                continuation: continuation)
        continuation.onTermination = { [weak self] _ in self?.remove(id) }
        consumers.withLock { consumers in
            consumers.byID[id] = consumer
            consumerCount.store(consumers.byID.count, ordering: .releasing)
        }
        return stream
    }

    private func remove(_ id: Int) {
        consumers.withLock { consumers in
            consumers.byID[id] = nil
            consumerCount.store(consumers.byID.count, ordering: .releasing)
        }
    }

    /// Gives each consumer the changes it asked for (raw keys).
    func publish(_ changes: [BlobCache.Change]) {
        consumers.withLock { consumers in
            for consumer in consumers.byID.values {
                for change in changes {
                    let raw = change.key
                    guard raw.utf8.starts(with: consumer.prefix) else { continue }
                    if consumer.namespaceBytes == 0 {
                        // Cache-wide: not the reserved (namespaced, content-addressed) keys.
                        guard raw.utf8.first != 0 else { continue }
                        consumer.continuation.yield(change)
                    } else {
                        consumer.continuation.yield(change.droppingKeyPrefix(bytes: consumer.namespaceBytes))
                    }
                }
            }
        }
    }

    /// Ends every stream (the cache closed).
    func finishAll() {
        let ending = consumers.withLock { consumers -> [Consumer] in
            defer {
                consumers.byID.removeAll()
                consumerCount.store(0, ordering: .releasing)
            }
            return Array(consumers.byID.values)
        }
        for consumer in ending { consumer.continuation.finish() }
    }
}

extension BlobCache.Change {
    /// The same change to the key without its first `count` UTF-8 bytes (a namespace's prefix).
    func droppingKeyPrefix(bytes count: Int) -> Self {
        func strip(_ key: String) -> String { String(decoding: key.utf8.dropFirst(count), as: UTF8.self) }
        switch self {
        case .set(let key, let id): return .set(key: strip(key), id: id)
        case .removed(let key, let reason): return .removed(key: strip(key), reason: reason)
        }
    }
}
