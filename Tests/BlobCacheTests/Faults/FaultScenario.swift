import Foundation
import SystemPackage
import Testing
@testable import BlobCache

/// One operation to run under faults: the state it starts from, what it does, and what it may
/// change. The invariants every outcome must keep are in `FaultScenario.check`.
struct FaultScenario: Sendable, CustomStringConvertible {
    /// What the operation does to a key when it succeeds.
    enum Effect: Sendable {
        case becomes([UInt8])
        case removed
    }

    let name: String
    var durability: Durability = .processCrashSafe
    /// Limits the cache runs under during the operation (eviction may drop any unpinned key).
    var limits = BlobCache.Limits()
    /// Whether the operation may drop keys it does not name (eviction, expiry, a clear).
    var mayDropOthers = false
    /// Keys the operation changes, and how.
    var effects: [String: Effect] = [:]
    /// Damage made to the seeded directory before the operation (for repairs). When set, an
    /// operation that did not return leaves damage behind, which fsck --repair must fix.
    var damage: (@Sendable (String) -> Void)?
    /// The operation itself.
    let run: @Sendable (Context) throws -> Void

    var description: String { name }

    /// What the operation gets to work with.
    struct Context {
        let cache: BlobCache
        let directory: String
        let fileSystem: FaultyFileSystem
        let clock: ManualClock
    }

    // MARK: The starting state

    /// Packed values (3.8 KB incompressible, so 24 of them fill more than one 64 KiB segment,
    /// and four compressible ones) and loose ones (12 KB, 80 KB), under keys `p0`…, `l0`…;
    /// `e0`… expire after an hour.
    static let seeded: [String: [UInt8]] = {
        var values: [String: [UInt8]] = [:]
        for n in 0..<24 { values["p\(n)"] = n < 4 ? Samples.compressible(9000, seed: UInt64(100 + n))
                                                  : Samples.random(3800, seed: UInt64(100 + n)) }
        // Compressible loose values, so that recompression really re-encodes: zlib packs the
        // small ones (loose to packed) and keeps the large ones loose (replaced by rename).
        for n in 0..<4 { values["l\(n)"] = n < 2 ? Samples.random(12_000, seed: UInt64(200 + n))
                                                : Samples.compressible(n == 2 ? 12_000 : 80_000, seed: UInt64(200 + n)) }
        for n in 0..<3 { values["e\(n)"] = Samples.random(1500, seed: UInt64(300 + n)) }
        return values
    }()

    static func configuration(_ clock: ManualClock, durability: Durability, limits: BlobCache.Limits) -> BlobCache.Configuration {
        .testing(clock: clock) {
            $0.packThreshold = 4096
            $0.packSegmentLimit = 64 << 10
            $0.durability = durability
            $0.maxStoredBytes = limits.maxStoredBytes
            $0.maxEntries = limits.maxEntries
            $0.snapshotThreshold = 0
            // Other tests spawn child processes: between fork and exec a child briefly holds
            // a copy of every descriptor, the lock's included. Wait for it rather than fail.
            $0.lockTimeout = nil
        }
    }

    /// Builds the starting state in `directory`: the seeded values, then the first five packed
    /// ones replaced and set back (so the segments hold dead records).
    static func seed(_ directory: String, clock: ManualClock) throws {
        let cache = try BlobCache(directory: directory, configuration: configuration(clock, durability: .processCrashSafe, limits: .init()))
        for (key, value) in seeded.sorted(by: { $0.key < $1.key }) {
            try cache.set(value, forKey: key, expiry: key.hasPrefix("e") ? .after(.seconds(3600)) : nil)
        }
        for n in 0..<5 { try cache.set(Samples.random(3800, seed: UInt64(900 + n)), forKey: "p\(n)") }
        for n in 0..<5 { try cache.set(seeded["p\(n)"]!, forKey: "p\(n)") }
        try cache.close()
    }

    // MARK: The invariants

    /// How the operation ended.
    enum Outcome {
        case returned
        case threw
        case crashed
    }

    /// Checks the directory after the operation: reopened with the real file system, every key
    /// the operation did not name reads back its exact bytes (or is gone, where the operation
    /// may drop others); each named key reads its old or new bytes, or is absent where that is
    /// allowed (its new state when the operation returned); no listed key fails to read;
    /// totals agree with the entries; the caps hold; fsck finds no error.
    func check(_ directory: String, outcome: Outcome, clock: ManualClock, label: String, fsckMayRepair: Bool = false) throws {
        if fsckMayRepair {
            var options = BlobCache.CheckOptions()
            options.repair = true
            options.lockTimeout = nil
            let report = try BlobCache.check(directory: directory, options: options)
            #expect(report.errorsLeft.isEmpty, "\(label): fsck --repair left \(report.errorsLeft)")
        }
        let cache = try BlobCache(directory: directory, configuration: Self.configuration(clock, durability: durability, limits: limits))
        defer { try? cache.close() }
        var expected = Self.seeded
        let keys = Set(try cache.keys())
        for key in keys {
            let read: [UInt8]??
            do { read = try cache.bytes(forKey: key) } catch { read = nil; Issue.record("\(label): \(key) fails to read: \(error)") }
            guard let read else { continue }
            guard let bytes = read else {
                Issue.record("\(label): \(key) is listed but reads as a miss")
                continue
            }
            var allowed = [expected[key]]
            if case .becomes(let value) = effects[key] { allowed.append(value) }
            if outcome == .returned, let effect = effects[key] {
                guard case .becomes(let value) = effect else {
                    Issue.record("\(label): \(key) was removed by an operation that returned, but reads back")
                    continue
                }
                allowed = [value]
            }
            if !allowed.contains(where: { same($0, bytes) }) { Issue.record("\(label): \(key) reads wrong bytes") }
        }
        for key in expected.keys.sorted() where !keys.contains(key) {
            let named = effects[key] != nil
            if !named && !mayDropOthers { Issue.record("\(label): \(key) was lost") }
            if named, outcome == .returned, case .becomes = effects[key] { Issue.record("\(label): \(key) was not set") }
        }
        for (key, effect) in effects where !expected.keys.contains(key) && !keys.contains(key) {
            if outcome == .returned, case .becomes = effect, !mayDropOthers { Issue.record("\(label): new key \(key) is missing") }
        }
        expected.removeAll()

        let entries = try cache.entries()
        let totals = try cache.totals()
        var footprints: [BlobID: Int] = [:]
        for entry in entries { footprints[entry.blobID] = entry.storedSize }
        #expect(totals.entries == entries.count, "\(label)")
        #expect(totals.storedBytes == footprints.values.reduce(0, +), "\(label)")
        if let cap = limits.maxStoredBytes { #expect(totals.storedBytes <= cap, "\(label)") }
        if let cap = limits.maxEntries { #expect(totals.entries <= cap, "\(label)") }
        try cache.close()
        var options = BlobCache.CheckOptions()
        options.lockTimeout = nil
        let report = try BlobCache.check(directory: directory, options: options)
        let errors = report.findings.filter { $0.severity == .error }
        #expect(errors.isEmpty, "\(label): fsck found \(errors)")
    }
}
