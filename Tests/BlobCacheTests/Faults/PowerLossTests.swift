import Foundation
import SystemPackage
import Testing
@testable import BlobCache

/// Power cuts under `.powerLossSafe`: each operation is cut at each of its fsyncs (before the
/// fsync reaches the disk) and once after it returned; for each cut, several drop sets of the
/// writes and name changes no fsync had made durable are applied (`PowerLossModel`), and the
/// directory that leaves must keep every invariant of `FaultScenario.check`.
@Suite("Power loss", .disabled(if: underThreadSanitizer, singleThreadedUnderTSan))
struct PowerLossTests {
    static let scenarios: [FaultScenario] = FaultTests.scenarios
        .filter { !["fsck --repair", "snapshot write (close)"].contains($0.name) }
        .map { var durable = $0; durable.durability = .powerLossSafe; return durable }

    static let dropSets: [PowerLossModel.DropSet] = [.durableOnly, .everything, .random(1), .random(2), .random(3)]

    @Test("under .powerLossSafe an operation cut at any fsync keeps every invariant, whatever the disk dropped",
          arguments: scenarios)
    func cutAtEveryFsync(scenario: FaultScenario) throws {
        let template = TemporaryDirectory()
        let clock = ManualClock()
        try FaultScenario.seed(template.path, clock: clock)
        let fsyncs = try Self.cut(scenario, template: template.path, start: clock.now(), at: .countOnly)
        var images = try Self.cut(scenario, template: template.path, start: clock.now(), at: .afterReturn)
        for fsync in Swift.stride(from: 1, through: fsyncs, by: FaultTests.stride) {
            images += try Self.cut(scenario, template: template.path, start: clock.now(), at: .fsync(fsync))
        }
        print("power loss: \(scenario.name): \(fsyncs) fsyncs, \(images) images checked (\(Self.dropSets.count) drop sets a cut)")
        #expect(images > Self.dropSets.count)
    }

    /// Where the power goes.
    enum Cut {
        /// Nowhere: count the operation's fsyncs.
        case countOnly
        /// Instead of the operation's nth fsync.
        case fsync(Int)
        /// Once the operation returned.
        case afterReturn
    }

    /// Runs the operation with the power cut at `cut` and checks the image of each drop set;
    /// returns the images checked (the fsyncs made, for `.countOnly`).
    static func cut(_ scenario: FaultScenario, template: String, start: Date, at cut: Cut) throws -> Int {
        let work = TemporaryDirectory()
        let directory = work.appending("cache")
        try FileManager.default.copyItem(atPath: template, toPath: directory)
        let clock = ManualClock(start: start)
        let fileSystem = FaultyFileSystem()
        let configuration = FaultScenario.configuration(clock, durability: scenario.durability, limits: scenario.limits)
        fileSystem.startPowerLossTracking(root: directory)
        let cache = try BlobCache(directory: directory, configuration: configuration.through(fileSystem))
        if case .fsync(let n) = cut { fileSystem.arm(.init(call: .sync, occurrence: n, fault: .crash)) } else { fileSystem.arm(nil) }
        let outcome: FaultScenario.Outcome
        do {
            try scenario.run(.init(cache: cache, directory: directory, fileSystem: fileSystem, clock: clock))
            outcome = .returned
        } catch {
            outcome = fileSystem.crashed ? .crashed : .threw
        }
        // The disk as it stands at the cut, before anything else (a close) writes.
        let model = fileSystem.powerLossModel!
        let fsyncs = fileSystem.counts[.sync] ?? 0
        fileSystem.crashNow()
        try? cache.close()
        switch cut {
        case .countOnly:
            #expect(outcome == .returned, "\(scenario.name) failed without a fault")
            return fsyncs
        case .fsync:
            if !fileSystem.fired { return 0 }
        case .afterReturn:
            #expect(outcome == .returned, "\(scenario.name) failed without a fault")
        }
        var images = 0
        for drops in dropSets {
            let image = work.appending("image-\(images)")
            try model.image(drops, at: image)
            let label = "\(scenario.name), power cut at \(cut), \(drops)"
            try scenario.check(image, outcome: outcome == .returned ? .returned : .crashed, clock: clock, label: label)
            images += 1
        }
        return images
    }
}
