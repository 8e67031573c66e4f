import Crypto
import Foundation
import SystemPackage
import Testing
@testable import BlobCache

/// `compact(rekeyingTo:)` killed at every system call it makes (a crash through the file
/// system seam: that call and every later one fail, as if the process were gone, and what it
/// wrote stays in the page cache, as after SIGKILL): afterwards the old key or the new key
/// opens the cache, never neither, the other key is refused, and every value reads back.
@Suite("Rekeying under crashes", .disabled(if: underThreadSanitizer, singleThreadedUnderTSan))
struct RekeyTests {
    private static let oldKey = SymmetricKey(data: [UInt8](repeating: 0xA1, count: 32))
    private static let newKey = SymmetricKey(data: [UInt8](repeating: 0xB2, count: 32))

    /// Packed and loose values, a namespace's and a content-addressed one.
    private static let values: [String: [UInt8]] = {
        var values: [String: [UInt8]] = [:]
        for n in 0..<6 { values["p\(n)"] = Samples.random(900 + 300 * n, seed: UInt64(500 + n)) }
        for n in 0..<3 { values["l\(n)"] = n == 0 ? Samples.compressible(90_000, seed: 600) : Samples.random(20_000 * (n + 1), seed: UInt64(600 + n)) }
        return values
    }()
    private static let stored = Array("a content-addressed value".utf8)

    private static func configuration(_ key: SymmetricKey?, _ fileSystem: FaultyFileSystem? = nil) -> BlobCache.Configuration {
        .testing {
            $0.packThreshold = 4096
            if let key { $0.encryption = .aesGCM(key: key) }
            if let fileSystem { $0.fileSystem = fileSystem }
        }
    }

    @Test("a rekey killed at any system call leaves the old key or the new key working, and every value")
    func killedAtEveryCall() throws {
        let template = TemporaryDirectory()
        let seeded = try BlobCache(directory: template.path, configuration: Self.configuration(Self.oldKey))
        for (key, value) in Self.values { try seeded.set(value, forKey: key) }
        try seeded.namespace("ns").set(Self.values["p1"]!, forKey: "shared")
        try seeded.store(Self.stored)
        try seeded.close()

        let traced = TemporaryDirectory()
        try FileManager.default.copyItem(atPath: template.path, toPath: traced.appending("cache"))
        let trace = try Self.rekey(traced.appending("cache"), crashAt: nil)
        #expect(trace.count > 20)
        var occurrences: [FileSystemCall: Int] = [:]
        var oldKeyWorked = 0, newKeyWorked = 0
        for (step, call) in trace.enumerated() {
            occurrences[call, default: 0] += 1
            guard step % FaultTests.stride == 0 else { continue }
            let label = "crash at \(call) #\(occurrences[call]!) (call \(step + 1) of \(trace.count))"
            let work = TemporaryDirectory()
            let directory = work.appending("cache")
            try FileManager.default.copyItem(atPath: template.path, toPath: directory)
            _ = try Self.rekey(directory, crashAt: .init(call: call, occurrence: occurrences[call]!, fault: .crash))
            let opened: BlobCache
            let refused: SymmetricKey
            do {
                opened = try BlobCache(directory: directory, configuration: Self.configuration(Self.oldKey))
                refused = Self.newKey
                oldKeyWorked += 1
            } catch BlobCacheError.wrongEncryptionKey {
                do {
                    opened = try BlobCache(directory: directory, configuration: Self.configuration(Self.newKey))
                } catch {
                    Issue.record("\(label): neither key opens the cache: \(error)")
                    continue
                }
                refused = Self.oldKey
                newKeyWorked += 1
            }
            for (key, value) in Self.values { #expect(try opened.bytes(forKey: key) == value, "\(label): \(key)") }
            #expect(try opened.namespace("ns").bytes(forKey: "shared") == Self.values["p1"]!, "\(label)")
            #expect(try opened.totals().entries == Self.values.count + 2, "\(label)")
            try opened.close()
            #expect(throws: BlobCacheError.wrongEncryptionKey(path: directory), "\(label)") {
                try BlobCache(directory: directory, configuration: Self.configuration(refused))
            }
            var options = BlobCache.CheckOptions()
            options.encryption = .aesGCM(key: refused == Self.newKey ? Self.oldKey : Self.newKey)
            let report = try BlobCache.check(directory: directory, options: options)
            #expect(report.errors.isEmpty, "\(label): \(report.errors)")
        }
        // Both sides of the commit point were reached.
        #expect(oldKeyWorked > 0 && newKeyWorked > 0)
        print("rekey crash points: \(trace.count) calls; old key worked after \(oldKeyWorked), new key after \(newKeyWorked)")
    }

    /// Rekeys the cache in `directory` through a faulty file system with `crashAt` armed;
    /// returns the calls the rekey made (after the open).
    private static func rekey(_ directory: String, crashAt trigger: FaultyFileSystem.Trigger?) throws -> [FileSystemCall] {
        let fileSystem = FaultyFileSystem()
        let cache = try BlobCache(directory: directory, configuration: configuration(oldKey, fileSystem))
        fileSystem.arm(trigger)
        fileSystem.startTracing()
        do {
            // (A crash in a best-effort step, a snapshot or the saved counters, is not an error.)
            try cache.compact(rekeyingTo: .aesGCM(key: newKey))
        } catch {
            #expect(trigger != nil && fileSystem.crashed, "rekey failed without a fault: \(error)")
        }
        try? cache.close()
        return fileSystem.stopTracing().map(\.call)
    }
}
