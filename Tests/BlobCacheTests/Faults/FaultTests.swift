import Foundation
import SystemPackage
import Testing
@testable import BlobCache

/// Every operation, once per fault point: each Nth call of each kind of system call it makes
/// fails with EIO, with ENOSPC, or crashes the process there; then the invariants of
/// `FaultScenario.check` hold. Under `.powerLossSafe`, a power cut at each fsync (and after the
/// operation) with several drop sets keeps them too. The counts are printed.
@Suite("Faults at every system call", .disabled(if: underThreadSanitizer, singleThreadedUnderTSan))
struct FaultTests {
    static let scenarios: [FaultScenario] = {
        let newPacked = Samples.random(1800, seed: 7001)
        let newLoose = Samples.random(15_000, seed: 7002)
        // Hashed on one core while another creates its staging file (EarlyStagingTests).
        let newLarge = Samples.random(Parallel.threshold + 4096, seed: 7003)
        // Set from a stream: longer than a piece, so written as a pieced blob (format 4).
        let newStreamed = Samples.random(PiecedBlobFormat.pieceSize * 2 + 5000, seed: 7004)
        @Sendable func stream(_ value: [UInt8], into cache: BlobCache, forKey key: String) throws {
            let pending = try cache.startSet(forKey: key)
            for start in Swift.stride(from: 0, to: value.count, by: 700_000) {
                try pending.append(Array(value[start..<min(start + 700_000, value.count)]))
            }
            try pending.finish()
        }
        return [
            FaultScenario(name: "stream set new", effects: ["new": .becomes(newStreamed)]) {
                try stream(newStreamed, into: $0.cache, forKey: "new")
            },
            FaultScenario(name: "stream replace loose", effects: ["l0": .becomes(newStreamed)]) {
                try stream(newStreamed, into: $0.cache, forKey: "l0")
            },
            FaultScenario(name: "stream set at the cap", limits: .init(maxStoredBytes: 3 << 20), mayDropOthers: true,
                          effects: ["new": .becomes(newStreamed)]) {
                try stream(newStreamed, into: $0.cache, forKey: "new")
            },
            FaultScenario(name: "set new packed", effects: ["new": .becomes(newPacked)]) {
                try $0.cache.set(newPacked, forKey: "new")
            },
            FaultScenario(name: "set new loose", effects: ["new": .becomes(newLoose)]) {
                try $0.cache.set(newLoose, forKey: "new")
            },
            FaultScenario(name: "set new large", effects: ["new": .becomes(newLarge)]) {
                try $0.cache.set(newLarge, forKey: "new")
            },
            FaultScenario(name: "set dedup", effects: ["new": .becomes(FaultScenario.seeded["l1"]!)]) {
                try $0.cache.set(FaultScenario.seeded["l1"]!, forKey: "new")
            },
            FaultScenario(name: "replace packed", effects: ["p20": .becomes(newPacked)]) {
                try $0.cache.set(newPacked, forKey: "p20")
            },
            FaultScenario(name: "replace loose", effects: ["l0": .becomes(newLoose)]) {
                try $0.cache.set(newLoose, forKey: "l0")
            },
            FaultScenario(name: "replace loose by packed", effects: ["l2": .becomes(newPacked)]) {
                try $0.cache.set(newPacked, forKey: "l2")
            },
            FaultScenario(name: "remove loose", effects: ["l3": .removed]) {
                try $0.cache.removeValue(forKey: "l3")
            },
            FaultScenario(name: "remove packed", effects: ["p13": .removed]) {
                try $0.cache.removeValue(forKey: "p13")
            },
            FaultScenario(name: "remove all", mayDropOthers: true) {
                try $0.cache.removeAll()
            },
            FaultScenario(name: "evict by size", mayDropOthers: true) {
                try $0.cache.setLimits(.init(maxStoredBytes: 40_000))
            },
            FaultScenario(name: "evict by count", mayDropOthers: true) {
                try $0.cache.setLimits(.init(maxEntries: 5))
            },
            FaultScenario(name: "set at the cap", limits: .init(maxStoredBytes: 130_000), mayDropOthers: true,
                          effects: ["new": .becomes(newLoose)]) {
                try $0.cache.set(newLoose, forKey: "new")
            },
            FaultScenario(name: "remove expired", effects: ["e0": .removed, "e1": .removed, "e2": .removed]) {
                $0.clock.advance(by: .seconds(7200))
                try $0.cache.removeExpired()
            },
            FaultScenario(name: "compact") {
                try $0.cache.compact()
            },
            FaultScenario(name: "compact recompressing") {
                try $0.cache.compact(recompressingTo: .zlib(level: 1))
            },
            FaultScenario(name: "pack GC") {
                try $0.cache.engine.collectPackGarbage(minimumDeadFraction: 0.01, downToHalfAllowance: false)
            },
            FaultScenario(name: "journal rewrite") {
                try $0.cache.engine.rewriteJournal()
            },
            FaultScenario(name: "snapshot write (close)") {
                try $0.cache.close()
            },
            // Two reads first, so that the checkpoint has recency to journal before its copy.
            FaultScenario(name: "checkpoint (in use)") { context in
                _ = try context.cache.bytes(forKey: "p7")
                _ = try context.cache.bytes(forKey: "l0")
                _ = try context.cache.engine.directoryLock.withExclusive { try context.cache.engine.writeCheckpoint(onlyIfDue: false) }
            },
            FaultScenario(name: "fsck --repair", effects: ["l1": .removed, "e0": .removed, "e1": .removed, "e2": .removed], damage: { directory in
                flipByte(looseFile(directory, BlobID(hashing: FaultScenario.seeded["l1"]!)), at: 100)
                try? FileManager.default.createDirectory(atPath: directory + "/objects/0/0", withIntermediateDirectories: true)
                writeFile(directory + "/objects/0/0/tmp.1.2", [1, 2, 3])
            }) { context in
                var options = BlobCache.CheckOptions()
                options.repair = true
                options.lockTimeout = nil
                try context.cache.close()
                _ = try BlobCache.check(CacheFiles(root: CachePath(normalizing: context.directory)), io: FileIO(context.fileSystem), options: options)
            },
        ]
    }()

    static let errors: [FaultyFileSystem.Fault] = [.fail(.ioError), .fail(.noSpace), .crash]

    /// Every fault point by default; the sanitizer runs in CI take every Nth
    /// (`BLOBCACHE_FAULT_STRIDE`), since they run the same logic many times slower.
    static let stride = ProcessInfo.processInfo.environment["BLOBCACHE_FAULT_STRIDE"].flatMap(Int.init).map { max(1, $0) } ?? 1

    @Test("each operation keeps every invariant when any of its system calls fails or crashes", arguments: scenarios)
    func everyFaultPoint(scenario: FaultScenario) throws {
        let template = TemporaryDirectory()
        let clock = ManualClock()
        try FaultScenario.seed(template.path, clock: clock)
        scenario.damage?(template.path)
        let counts = try Self.run(scenario, template: template.path, start: clock.now(), trigger: nil).counts
        var points = 0
        for call in FileSystemCall.allCases {
            for occurrence in Swift.stride(from: 0, to: counts[call] ?? 0, by: Self.stride) {
                for fault in Self.errors {
                    let trigger = FaultyFileSystem.Trigger(call: call, occurrence: occurrence + 1, fault: fault)
                    _ = try Self.run(scenario, template: template.path, start: clock.now(), trigger: trigger)
                    points += 1
                }
            }
        }
        print("fault points: \(scenario.name): \(points) (\(counts.values.reduce(0, +)) system calls × \(Self.errors.count) faults, every \(Self.stride == 1 ? "" : "\(Self.stride)th ")call)")
        #expect(points > 0)
    }

    /// Copies the template, opens it through a faulty file system, runs the operation with
    /// `trigger` armed, and checks the invariants. Returns the calls the operation made.
    @discardableResult
    static func run(_ scenario: FaultScenario, template: String, start: Date, trigger: FaultyFileSystem.Trigger?)
        throws -> (counts: [FileSystemCall: Int], outcome: FaultScenario.Outcome) {
        let work = TemporaryDirectory()
        let directory = work.appending("cache")
        try FileManager.default.copyItem(atPath: template, toPath: directory)
        let clock = ManualClock(start: start)
        let fileSystem = FaultyFileSystem()
        let configuration = FaultScenario.configuration(clock, durability: scenario.durability, limits: scenario.limits)
        let outcome: FaultScenario.Outcome
        do {
            let cache = try BlobCache(directory: directory, configuration: configuration.through(fileSystem))
            fileSystem.arm(trigger)
            do {
                try scenario.run(.init(cache: cache, directory: directory, fileSystem: fileSystem, clock: clock))
                outcome = .returned
            } catch {
                outcome = fileSystem.crashed ? .crashed : .threw
            }
            try? cache.close()
        }
        let counts = fileSystem.counts
        let label = "\(scenario.name), \(trigger.map(String.init(describing:)) ?? "no fault")"
        if trigger == nil { #expect(outcome == .returned, "\(label)") }
        // Staged files are deleted once not needed (best effort: not the one whose unlink
        // failed), unless the process "crashed", in the operation or the maintenance or close after.
        if !fileSystem.crashed {
            let own = filesBelow(directory).filter { ($0.split(separator: "/").last ?? "").hasPrefix("tmp.\(getpid()).") }
                .filter { trigger?.call != .unlink || directory + "/" + $0 != fileSystem.firedPath }
            #expect(own.isEmpty, "\(label): staged files left behind: \(own)")
        }
        do {
            try scenario.check(directory, outcome: outcome, clock: clock, label: label,
                               fsckMayRepair: scenario.damage != nil && outcome != .returned)
        } catch {
            Issue.record("\(label): \(error)")
        }
        return (counts, outcome)
    }
}
