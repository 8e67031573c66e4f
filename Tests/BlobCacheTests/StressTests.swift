import Foundation
import Testing
@testable import BlobCache

/// Several threads on a few shared keys at once: gets, sets, removes, sets of bytes another key
/// holds, compactions, expiry sweeps and limit changes, checked against a model. Writes to one
/// key are ordered by the test (a lock per key, held across the call), so the model knows each
/// key's history; reads are not, and must return a value the key held at some moment while the
/// read ran. Run under ThreadSanitizer in CI.
@Suite("Concurrency")
struct StressTests {
    static let keys = 12
    static let versions = 6

    /// Value `version` of `key`: deterministic, a mix of packed and loose sizes; versions ≥ 4 of
    /// every key are the same bytes (shared blobs, re-set by many keys at once).
    static func value(key: Int, version: Int) -> [UInt8] {
        if version >= 4 { return Samples.random(version == 4 ? 700 : 9000, seed: UInt64(10_000 + version)) }
        let size = [300, 2500, 6000, 20_000][(key + version) % 4]
        return Samples.random(size, seed: UInt64(key * 100 + version))
    }

    /// One key's history: the states it held in order (`nil`: absent) and the one a write in
    /// flight is giving it. Writers hold `writer` across the cache call.
    final class KeyHistory: Sendable {
        let writer = NSLock()
        private let record = Locked<(states: [[UInt8]?], inFlight: [UInt8]??)>(([nil], nil))

        /// Index of the current state.
        var current: Int { record.withLock { $0.states.count - 1 } }
        /// Every state from `start` on, and the one in flight.
        func states(from start: Int) -> [[UInt8]?] {
            record.withLock { Array($0.states[start...]) + ($0.inFlight.map { [$0] } ?? []) }
        }
        var last: [UInt8]? { record.withLock { $0.states.last! } }

        /// Makes `state` the key's state by `write` (holding the writer lock).
        func write(_ state: [UInt8]?, _ write: () throws -> Void) throws {
            try writer.withLock {
                record.withLock { $0.inFlight = .some(state) }
                defer { record.withLock { $0.inFlight = nil } }
                try write()
                record.withLock { $0.states.append(state) }
            }
        }
    }

    @Test("threads on shared keys: every read returns a value its key held meanwhile; the end state is the model's",
          arguments: [false, true])
    func sharedKeys(capped: Bool) throws {
        let dir = TemporaryDirectory()
        let cache = try BlobCache(directory: dir.path, configuration: .testing {
            $0.packThreshold = 4096
            $0.packSegmentLimit = 64 << 10
            $0.maxStoredBytes = capped ? 60_000 : nil
        })
        let histories = (0..<Self.keys).map { _ in KeyHistory() }
        let failures = Locked<[String]>([])
        let threads = 4, operations = 1500
        let done = DispatchGroup()
        for thread in 0...threads {
            done.enter()
            Thread {
            defer { done.leave() }
            var generator = SeededGenerator(seed: UInt64(thread + (capped ? 100 : 0)))
            func fail(_ message: String) { failures.withLock { $0.append("thread \(thread): \(message)") } }
            do {
                if thread == threads {
                    // Maintenance: compaction, expiry sweeps, limit changes while the others work.
                    for round in 0..<30 {
                        switch round % 3 {
                        case 0: try cache.compact()
                        case 1: try cache.removeExpired()
                        default: try cache.setLimits(.init(maxStoredBytes: capped ? (round % 2 == 0 ? 40_000 : 60_000) : nil))
                        }
                    }
                    return
                }
                for _ in 0..<operations {
                    let key = Int(generator.next() % UInt64(Self.keys))
                    let history = histories[key]
                    switch generator.next() % 10 {
                    case 0...4:
                        let start = history.current
                        let read = try cache.bytes(forKey: "k\(key)")
                        let allowed = history.states(from: start)
                        if let read, !allowed.contains(where: { $0 == read }) { fail("k\(key) read bytes it never held then") }
                        if read == nil, !capped, !allowed.contains(where: { $0 == nil }) { fail("k\(key) read as a miss while set") }
                    case 5...8:
                        let value = Self.value(key: key, version: Int(generator.next() % UInt64(Self.versions)))
                        try history.write(value) { try cache.set(value, forKey: "k\(key)") }
                    default:
                        try history.write(nil) { try cache.removeValue(forKey: "k\(key)") }
                    }
                }
            } catch {
                fail("\(error)")
            }
            }.start()
        }
        done.wait()
        for failure in failures.withLock({ $0 }) { Issue.record("\(failure)") }

        // Quiet now: every key holds its last state (or, under a cap, nothing).
        func expectModel(_ cache: BlobCache, _ when: String) throws {
            for (key, history) in histories.enumerated() {
                let read = try cache.bytes(forKey: "k\(key)")
                if capped { #expect(read == nil || read == history.last, "\(when): k\(key)") } else { #expect(read == history.last, "\(when): k\(key)") }
            }
        }
        try expectModel(cache, "after the threads")
        let totals = try cache.totals()
        // Pack collections and journal rewrites ran in steps among the other threads' operations.
        let maintenanceRuns = cache.engine.maintenanceGate.withLock { $0 }
        print("stress: capped \(capped): \(maintenanceRuns) maintenance runs outside the lock, "
              + "\(totals.counters.packCollections) pack collections, \(totals.counters.journalCompactions) journal rewrites")
        // Uncapped, dead bytes and the journal rarely pass their 1 MiB allowances in this run.
        if capped { #expect(maintenanceRuns > 0) }
        var footprints: [BlobID: Int] = [:]
        for entry in try cache.entries() { footprints[entry.blobID] = entry.storedSize }
        #expect(totals.storedBytes == footprints.values.reduce(0, +))
        try cache.close()
        #expect(try BlobCache.check(directory: dir.path).findings.filter { $0.severity == .error }.isEmpty)
        let reopened = try BlobCache(directory: dir.path, configuration: .testing { $0.packThreshold = 4096 })
        try expectModel(reopened, "after reopening")
    }
}
