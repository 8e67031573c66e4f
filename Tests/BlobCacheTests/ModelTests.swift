import Foundation
import Testing
@testable import BlobCache

/// A plain in-memory model of the cache's contract: values, pinning, expiry, LRU order,
/// limits (entries and stored bytes, each distinct value counted once).
private struct ReferenceModel {
    struct Item { var value: [UInt8]; var id: BlobID; var pinned: Bool; var expiry: Int64 }
    var items: [String: Item] = [:]
    /// The changes an observer must see, in order (sorted within a step where the order is
    /// the engine's own: a sweep of expired entries).
    var changes: [BlobCache.Change] = []
    /// Unpinned keys, least recently used first.
    var lru: [String] = []
    let maxEntries: Int
    let maxBytes: Int
    let footprint: [BlobID: Int]
    /// How the cache names values (keyed under encryption).
    let hasher: BlobHasher

    var storedBytes: Int {
        var seen = Set<BlobID>()
        return items.values.reduce(0) { total, item in seen.insert(item.id).inserted ? total + footprint[item.id]! : total }
    }

    mutating func set(_ key: String, _ value: [UInt8], pinned: Bool, expiry: Int64) {
        remove(key, reason: nil)
        items[key] = Item(value: value, id: hasher.id(of: value), pinned: pinned, expiry: expiry)
        changes.append(.set(key: key, id: hasher.id(of: value)))
        if !pinned { lru.append(key) }
        while items.count > maxEntries || storedBytes > maxBytes { remove(lru.first!, reason: .evicted) }
    }

    mutating func get(_ key: String, now: Int64) -> [UInt8]? {
        guard let item = items[key] else { return nil }
        if item.expiry <= now { remove(key, reason: .expired); return nil }
        if !item.pinned { lru.removeAll { $0 == key }; lru.append(key) }
        return item.value
    }

    mutating func remove(_ key: String, reason: RemovalReason?) {
        guard items.removeValue(forKey: key) != nil else { return }
        if let reason { changes.append(.removed(key: key, reason: reason)) }
        lru.removeAll { $0 == key }
    }

    mutating func removeExpired(now: Int64, observed: Bool = true) {
        for (key, item) in items where item.expiry <= now { remove(key, reason: observed ? .expired : nil) }
    }

    mutating func removeAllUnpinned() {
        for key in lru {
            items[key] = nil
            changes.append(.removed(key: key, reason: .cleared))
        }
        lru = []
    }
}

@Suite("Model-based")
struct ModelTests {
    /// Seed 1 reopens by replaying the journal; seed 2 from a snapshot written at every close;
    /// seed 3 from a snapshot plus the journal written after it (rewritten every 2 KiB);
    /// seed 4 as seed 2 with encryption on (sealed blobs, records and snapshot, keyed ids).
    /// The memory tier is on (every value fits in it) and an observer listens throughout:
    /// every read agrees with the model whether memory or disk served it, and the changes the
    /// observer receives are the model's.
    @Test("thousands of random operations agree with a reference model", arguments: [1, 2, 3, 4] as [UInt64])
    func randomOperations(seed: UInt64) async throws {
        let dir = TemporaryDirectory()
        let clock = ManualClock()
        let maxEntries = 25, maxBytes = 60_000
        let configure: (inout BlobCache.Configuration) -> Void = {
            $0.maxEntries = maxEntries
            $0.maxStoredBytes = maxBytes
            $0.eviction = .lru          // the model's order (the segmented LRU has tests of its own)
            $0.packThreshold = 2048     // both placements
            $0.snapshotThreshold = [1: Int64.max, 2: 0, 3: 2048, 4: 0][seed]!
            if seed == 4 { $0.encryption = .aesGCM(key: testKey) }
            // Other tests spawn child processes: between fork and exec a child briefly holds
            // a copy of every descriptor, the lock's included. Wait for it rather than fail.
            $0.lockTimeout = nil
            $0.memoryLimit = 64 << 10
        }
        var generator = SeededGenerator(seed: seed)
        // A pool of values, so keys often share blobs; pinned entries use the small ones.
        let values: [[UInt8]] = (0..<24).map { n in
            n % 3 == 0 ? Samples.compressible(200 + n * 300, seed: UInt64(n)) : Samples.random(50 + n * 200, seed: UInt64(n))
        }
        let cipher = seed == 4 ? try CacheCipher(.aesGCM(key: testKey)) : nil
        let hasher = BlobHasher(cipher)
        let footprints = Dictionary(uniqueKeysWithValues: values.map { value in
            (hasher.id(of: value),
             value.withUnsafeBytes { PreparedBlob.encoding($0, id: hasher.id(of: $0), codec: .lz4, packThreshold: 2048, cipher: cipher).imageCount })
        })
        var model = ReferenceModel(maxEntries: maxEntries, maxBytes: maxBytes, footprint: footprints, hasher: hasher)
        var cache = try BlobCache(directory: dir.path, configuration: .testing(clock: clock, configure))
        var changes = cache.changes().makeAsyncIterator()
        let now = { Nanoseconds.from(clock.now()) }
        var memoryHits = 0

        for step in 0..<3000 {
            let key = "key-\(generator.next() % 40)"
            switch generator.next() % 100 {
            case 0..<40:
                let pinned = generator.next() % 20 == 0 && model.items.values.filter(\.pinned).count < 5
                let value = values[Int(generator.next() % UInt64(pinned ? 4 : values.count))]
                let seconds = generator.next() % 4 == 0 ? Int64(generator.next() % 100) + 1 : nil
                try cache.set(value, forKey: key, expiry: seconds.map { .after(.seconds($0)) }, pinned: pinned)
                model.set(key, value, pinned: pinned, expiry: seconds.map { now() + $0 * 1_000_000_000 } ?? Nanoseconds.never)
            case 40..<75:
                #expect(same(try cache.bytes(forKey: key), model.get(key, now: now())), "step \(step): get \(key)")
            case 75..<83:
                #expect(try cache.removeValue(forKey: key) == (model.items[key] != nil), "step \(step): remove \(key)")
                model.remove(key, reason: .explicit)
            case 83..<90:
                clock.advance(by: .seconds(Int64(generator.next() % 30)))
            case 90..<94:
                memoryHits += cache.statistics().memoryHits
                try cache.close()
                #expect(await changes.next() == nil, "step \(step): the stream ends at close")
                cache = try BlobCache(directory: dir.path, configuration: .testing(clock: clock, configure))
                changes = cache.changes().makeAsyncIterator()
                if seed == 2 || seed == 4 { #expect(cache.openReport.restoredFromSnapshot, "step \(step): snapshot used") }
                // Dropped by the open, before anyone could listen.
                model.removeExpired(now: now(), observed: false)
            case 94..<96:
                try cache.compact()
                model.removeExpired(now: now())
            case 96..<98:
                try cache.removeExpired()
                model.removeExpired(now: now())
            default:
                try cache.removeAll()
                model.removeAllUnpinned()
            }
            // The observer saw exactly the model's changes: everything up to a marker put
            // through the same delivery after the step.
            cache.engine.changeHub.publish([.set(key: "\u{1}marker", id: BlobID(hashing: []))])
            var seen: [BlobCache.Change] = []
            while let change = await changes.next(), change.key != "\u{1}marker" { seen.append(change) }
            let byKey = { (changes: [BlobCache.Change]) in changes.map { "\($0)" }.sorted() }
            #expect(byKey(seen) == byKey(model.changes), "step \(step): changes")
            model.changes.removeAll()
            // After every step: the same entries, the same LRU order, the same totals.
            let entries = try cache.entries()
            let unpinned = entries.filter { !$0.pinned }.map(\.key)
            let pinned = Set(entries.filter(\.pinned).map(\.key))
            #expect(unpinned == model.lru, "step \(step): LRU order")
            #expect(pinned == Set(model.items.filter { $0.value.pinned }.keys), "step \(step): pinned")
            let totals = try cache.totals()
            #expect(totals.storedBytes == model.storedBytes, "step \(step): stored bytes")
            #expect(totals.entries == model.items.count, "step \(step): entries")
            if unpinned != model.lru || totals.storedBytes != model.storedBytes { return }
        }
        for (key, item) in model.items where item.expiry > now() {
            #expect(same(try cache.bytes(forKey: key), item.value))
        }
        memoryHits += cache.statistics().memoryHits
        #expect(memoryHits > 10, "the memory tier served reads (\(memoryHits))")
    }
}
