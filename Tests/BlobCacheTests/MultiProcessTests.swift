import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif
@testable import BlobCache

/// Many processes, and many opens in one process, sharing one directory (docs/ARCHITECTURE.md,
/// "Many processes").
@Suite("Many processes, one cache", .serialized)
struct MultiProcessTests {
    @Test("two opens in one process see each other's sets, removes and clears at their next operation")
    func twoOpensInOneProcess() throws {
        let dir = TemporaryDirectory()
        let first = try BlobCache(directory: dir.path, configuration: .testing())
        let second = try BlobCache(directory: dir.path, configuration: .testing())
        try first.set([1, 2, 3], forKey: "a")
        #expect(try second.bytes(forKey: "a") == [1, 2, 3])
        try second.set(Array(repeating: 7, count: 100_000), forKey: "b")   // a loose blob
        #expect(try first.bytes(forKey: "b") == Array(repeating: 7, count: 100_000))
        #expect(try first.keys().sorted() == ["a", "b"])
        try second.removeValue(forKey: "a")
        #expect(try first.bytes(forKey: "a") == nil)
        try first.compact()   // rewrites the journal: the second open reloads it
        try second.set([9], forKey: "c")
        #expect(try first.bytes(forKey: "c") == [9])
        #expect(try second.bytes(forKey: "b")?.count == 100_000)
        try first.removeAll()
        #expect(try second.keys().isEmpty)
        try first.close()
        try second.set([4], forKey: "d")
        try second.close()
        let report = try BlobCache.check(directory: dir.path)
        #expect(report.errors.isEmpty, "\(report.errors)")
        let reopened = try BlobCache(directory: dir.path, configuration: .testing())
        #expect(try reopened.keys() == ["d"])
        try reopened.close()
    }

    @Test("an open whose active segment another open collected appends to a new one, never to the deleted file")
    func activeSegmentCollectedElsewhere() throws {
        let dir = TemporaryDirectory()
        let first = try BlobCache(directory: dir.path, configuration: .testing())
        let second = try BlobCache(directory: dir.path, configuration: .testing())
        // Both opens learn segment 1 as the one appended to.
        try first.set(Samples.random(1000, seed: 1), forKey: "a")
        try second.set(Samples.random(1000, seed: 2), forKey: "b")
        // Over 1 MiB of packed values, then all removed: the first open's maintenance collects
        // the newest segment, now all dead, and deletes it.
        for n in 0..<300 { try first.set(Samples.random(4000, seed: UInt64(10 + n)), forKey: "k\(n)") }
        try first.removeAll()
        #expect(!FileManager.default.fileExists(atPath: dir.appending("packs/000001.pack")))
        try second.set(Samples.random(1000, seed: 3), forKey: "after")
        #expect(try first.bytes(forKey: "after") == Samples.random(1000, seed: 3))
        try first.close()
        try second.close()
        #expect(try BlobCache.check(directory: dir.path).errors.isEmpty)
    }

    @Test("a get catches up with another open's writes without the flock (held elsewhere) and leaves a torn tail for a writer to cut")
    func readsCatchUpWithoutTheFlock() throws {
        let dir = TemporaryDirectory()
        let writer = try BlobCache(directory: dir.path, configuration: .testing())
        let reader = try BlobCache(directory: dir.path, configuration: .testing { $0.lockTimeout = .zero })
        try writer.set([1], forKey: "before")
        #expect(try reader.bytes(forKey: "before") == [1])
        try writer.set([2, 3], forKey: "new")
        // Half a record after the writer's: what a writer in the middle of an append leaves.
        let journal = dir.appending("journal")
        let torn = readFile(journal).count + 5
        let handle = try #require(FileHandle(forWritingAtPath: journal))
        try handle.seekToEnd()
        try handle.write(contentsOf: Data([0x40, 0, 0, 0, 7]))
        try handle.close()
        // Another file description holds the flock, as `flock DIR/lock cmd` would.
        let holder = open(dir.appending("lock"), O_RDWR)
        defer { close(holder) }
        #expect(flock(holder, LOCK_EX | LOCK_NB) == 0)
        #expect(try reader.bytes(forKey: "new") == [2, 3])
        #expect(try reader.entry(forKey: "before") != nil)
        #expect(readFile(journal).count == torn, "a read without the flock must not cut the tail")
        #expect(throws: BlobCacheError.self) { try reader.set([4], forKey: "w") }   // a write needs the flock
        flock(holder, LOCK_UN)
        try reader.set([4], forKey: "w")   // the tail is cut first, then the set appended
        #expect(try writer.bytes(forKey: "w") == [4])
        try writer.close()
        try reader.close()
        let report = try BlobCache.check(directory: dir.path)
        #expect(report.findings.isEmpty, "\(report.findings)")
    }

    @Test("a read without the flock never applies records whose write failed: another open's set written where they were survives (review finding)")
    func readsSkipRecordsOfAFailedWrite() throws {
        let dir = TemporaryDirectory()
        let fileSystem = FaultyFileSystem()
        let clock = ManualClock()
        let writer = try BlobCache(directory: dir.path, configuration: .testing(clock: clock) { $0.fileSystem = fileSystem })
        // The other opens' clocks stand still: for them nothing expires.
        let reader = try BlobCache(directory: dir.path, configuration: .testing { $0.lockTimeout = .zero })
        let other = try BlobCache(directory: dir.path, configuration: .testing())
        for n in 1...4 { try writer.set([UInt8(n)], forKey: "key-number-\(n)", expiry: .after(.seconds(10))) }
        #expect(try reader.bytes(forKey: "key-number-1") == [1])
        // The writer's four remove records: half of them written (complete records among
        // them), then ENOSPC, and the journal cut back. The reader reads in between, without
        // the flock (the writer holds it): it must not take in what is about to be cut.
        let seen = Locked<Result<[UInt8]?, any Error>?>(nil)
        fileSystem.shortWriteNext(pathSuffix: "/journal") { seen.withLock { $0 = Result { try reader.bytes(forKey: "key-number-2") } } }
        clock.advance(by: .seconds(15))
        #expect(throws: (any Error).self) { try writer.removeExpired() }
        #expect(try seen.withLock { $0 }?.get() == [2])
        // Another open appends an acknowledged set where the failed records were; then the
        // reader writes, catching up under the flock from where it believes the journal ends.
        let long = "acknowledged-by-another-open-" + String(repeating: "k", count: 40)
        try other.set(Array(repeating: 7, count: 50), forKey: long)
        try reader.set([9], forKey: "r")
        let fresh = try BlobCache(directory: dir.path, configuration: .testing())
        #expect(try fresh.bytes(forKey: long) == Array(repeating: 7, count: 50))
        #expect(try fresh.bytes(forKey: "r") == [9])
        for cache in [reader, other, fresh] { try cache.close() }
        try? writer.close()
        #expect(try BlobCache.check(directory: dir.path).errors.isEmpty)
    }

    @Test("a pack collection names its segment when it is done: another open that started a segment of the reserved number keeps it")
    func collectionRenumbersItsSegment() throws {
        let dir = TemporaryDirectory()
        let small = BlobCache.Configuration.testing { $0.packSegmentLimit = 64 << 10 }
        let first = try BlobCache(directory: dir.path, configuration: small)
        let second = try BlobCache(directory: dir.path, configuration: small)
        // Three 64 KiB segments, the first two half dead (below the 1 MiB that starts a collection).
        for n in 0..<36 { try first.set(Samples.random(4000, seed: UInt64(n)), forKey: "k\(n)") }
        for n in stride(from: 0, to: 28, by: 2) { try first.removeValue(forKey: "k\(n)") }
        let plan = try #require(try first.engine.withState { try $0.planPackCollection(minimumDeadFraction: 0.1, downTo: 0) })
        let reserved = try #require(plan.number)
        let copy = try plan.copy()   // outside the flock
        // Meanwhile the other open fills the newest segment and starts the next: the reserved number.
        for n in 0..<20 { try second.set(Samples.random(4000, seed: UInt64(100 + n)), forKey: "s\(n)") }
        #expect(FileManager.default.fileExists(atPath: dir.appending("packs/" + PackFormat.fileName(of: reserved))))
        let journal = try first.engine.withState { try $0.adopt(copy) }
        try journal.sync()
        try first.engine.withState { $0.finish(plan) }
        for cache in [first, second] {
            for n in 0..<36 {
                #expect(try cache.bytes(forKey: "k\(n)") == (n < 28 && n % 2 == 0 ? nil : Samples.random(4000, seed: UInt64(n))))
            }
            for n in 0..<20 { #expect(try cache.bytes(forKey: "s\(n)") == Samples.random(4000, seed: UInt64(100 + n))) }
        }
        try first.close()
        try second.close()
        let report = try BlobCache.check(directory: dir.path)
        #expect(report.errors.isEmpty, "\(report.errors)")
    }

    @Test("one open at a time runs maintenance: another's claim is refused while it is held, and given back after")
    func oneMaintainerAtATime() throws {
        let dir = TemporaryDirectory()
        let first = try BlobCache(directory: dir.path, configuration: .testing())
        let second = try BlobCache(directory: dir.path, configuration: .testing())
        let inner = first.engine.directoryLock.ifNoOtherMaintenance { second.engine.directoryLock.ifNoOtherMaintenance { true } }
        #expect(inner == .some(nil))
        #expect(second.engine.directoryLock.ifNoOtherMaintenance { true } == true)
        try first.close()
        try second.close()
    }

    @Test("an open that cannot map DIR/sequence is refused, its values kept: every writer must move the sequence")
    func sequenceMustBeMapped() throws {
        let dir = TemporaryDirectory()
        let cache = try BlobCache(directory: dir.path, configuration: .testing())
        try cache.set([1, 2], forKey: "kept")
        try cache.close()
        try FileManager.default.removeItem(atPath: dir.appending("sequence"))
        try FileManager.default.createDirectory(atPath: dir.appending("sequence"), withIntermediateDirectories: false)
        #expect {
            try BlobCache(directory: dir.path, configuration: .testing())
        } throws: { error in
            if case BlobCacheError.directoryUnusable(_, let reason) = error { return reason.contains("sequence") }
            return false
        }
        try FileManager.default.removeItem(atPath: dir.appending("sequence"))
        let reopened = try BlobCache(directory: dir.path, configuration: .testing())
        #expect(try reopened.bytes(forKey: "kept") == [1, 2])
        try reopened.close()
    }

    @Test("an open that fails after changing files leaves DIR/sequence odd, so no other open skips checking them; nothing acknowledged is lost (review finding)")
    func failedOpenLeavesTheSequenceOdd() throws {
        let dir = TemporaryDirectory()
        let first = try BlobCache(directory: dir.path, configuration: .testing())
        for n in 0..<8 { try first.set(Samples.random(2000, seed: UInt64(n)), forKey: "k\(n)") }
        // A second open with a lower cap evicts at open; under .powerLossSafe it fsyncs the
        // journal after writing the removals, and that fsync fails: the open throws.
        let fileSystem = FaultyFileSystem()
        fileSystem.arm(.init(call: .sync, occurrence: 1, fault: .fail(.ioError), pathSuffix: "/journal"))
        #expect(throws: (any Error).self) {
            try BlobCache(directory: dir.path, configuration: .testing {
                $0.fileSystem = fileSystem
                $0.durability = .powerLossSafe
                $0.maxStoredBytes = 6000
            })
        }
        #expect(fileSystem.fired)
        #expect(readFile(dir.appending("sequence"))[8] & 1 == 1, "the failed open left the sequence even")
        try first.set([7], forKey: "after")
        try first.close()
        let fresh = try BlobCache(directory: dir.path, configuration: .testing())
        #expect(try fresh.bytes(forKey: "after") == [7])
        for n in 0..<8 {
            let value = try fresh.bytes(forKey: "k\(n)")
            #expect(value == nil || value == Samples.random(2000, seed: UInt64(n)))
        }
        try fresh.close()
        #expect(try BlobCache.check(directory: dir.path).errors.isEmpty)
    }

    @Test("a damaged DIR/sequence is written anew only by an open that is alone: beside another open it is refused, so no counter goes back (review finding)")
    func sequenceRewrittenOnlyAlone() throws {
        let dir = TemporaryDirectory()
        let first = try BlobCache(directory: dir.path, configuration: .testing())
        try first.set([1], forKey: "a")
        let sequence = dir.appending("sequence")
        let before = readFile(sequence)
        try Data(repeating: 0, count: 32).write(to: URL(fileURLWithPath: sequence))
        #expect {
            try BlobCache(directory: dir.path, configuration: .testing())
        } throws: { error in
            if case BlobCacheError.directoryUnusable(_, let reason) = error { return reason.contains("other opens") }
            return false
        }
        #expect(readFile(sequence) == [UInt8](repeating: 0, count: 32), "the file was rewritten beside another open")
        try Data(before).write(to: URL(fileURLWithPath: sequence))
        try first.set([2], forKey: "b")
        try first.close()
        try Data(repeating: 0, count: 32).write(to: URL(fileURLWithPath: sequence))
        let alone = try BlobCache(directory: dir.path, configuration: .testing())   // alone: written anew
        #expect(try alone.bytes(forKey: "a") == [1] && alone.bytes(forKey: "b") == [2])
        try alone.close()
    }

    @Test("a segment file another open deleted and a third made anew under its number is read from the new file")
    func replacedSegmentIsReopened() throws {
        let dir = TemporaryDirectory()
        let first = try BlobCache(directory: dir.path, configuration: .testing())
        let reader = try BlobCache(directory: dir.path, configuration: .testing())
        try first.set(Samples.random(3000, seed: 1), forKey: "x")
        #expect(try reader.bytes(forKey: "x") == Samples.random(3000, seed: 1))   // segment 1 open in the reader
        try first.removeAll()
        try first.compact()   // deletes segment 1, leaves an empty segment 2 to append to
        try first.close()
        #expect(!FileManager.default.fileExists(atPath: dir.appending("packs/000001.pack")))
        // The empty segment goes too (as `rm` would take it): packs/ is empty, so an open that
        // never knew the old segment 1 makes a new one of that number.
        try FileManager.default.removeItem(atPath: dir.appending("packs/000002.pack"))
        let third = try BlobCache(directory: dir.path, configuration: .testing())
        try third.set(Samples.random(3000, seed: 2), forKey: "y")
        #expect(FileManager.default.fileExists(atPath: dir.appending("packs/000001.pack")))
        #expect(try reader.bytes(forKey: "y") == Samples.random(3000, seed: 2))
        try third.close()
        try reader.close()
        #expect(try BlobCache.check(directory: dir.path).errors.isEmpty)
    }

    @Test("the lock file held by flock(1) for 2 s: get waits and succeeds; --wait 0 exits 8 at once naming the holder", .disabled(if: underThreadSanitizer, childProcessesUnderTSan))
    func lockWait() throws {
        let dir = TemporaryDirectory()
        let cli = CLI(directory: dir.path)
        #expect(try cli.run(["put", "k"], stdin: Data([5])).status == 0)
        // flock(1) prints nothing until it holds the lock; the shell says "held" once it does.
        let holder = Process()
        holder.executableURL = URL(fileURLWithPath: "/usr/bin/flock")
        holder.arguments = [dir.appending("lock"), "sh", "-c", "echo held; sleep 2; echo released"]
        let out = Pipe()
        holder.standardOutput = out
        try holder.run()
        #expect(String(decoding: out.fileHandleForReading.availableData, as: UTF8.self) == "held\n")
        let refused = try cli.run(["--wait", "0", "get", "k"])
        #expect(refused.status == 8)
        #expect(refused.stderr.contains("in use") && refused.stderr.contains("pid \(holder.processIdentifier)"), "\(refused.stderr)")
        let waited = try cli.run(["get", "k"])   // default --wait 30
        #expect(waited.status == 0 && waited.stdout == Data([5]), "\(waited.stderr)")
        // The lock goes only when the shell has exited, after it said "released": get waited.
        #expect(String(decoding: out.fileHandleForReading.availableData, as: UTF8.self) == "released\n")
        holder.waitUntilExit()
    }

    @Test("4 writers at once, 2 of them SIGKILLed at random moments, twice: every acknowledged write reads back, fsck is clean", .disabled(if: underThreadSanitizer, childProcessesUnderTSan))
    func writersKilledMidRun() throws {
        try runWriters(mode: "shared", seed: 70)
    }

    @Test("the same under a 512 KiB cap: nothing wrong is ever read, the cap holds, fsck is clean", .disabled(if: underThreadSanitizer, childProcessesUnderTSan))
    func cappedWritersKilledMidRun() throws {
        try runWriters(mode: "shared-capped", seed: 71)
    }

    /// Two rounds of four `blobcache-crash-writer` processes in `mode` on one directory; in
    /// each, writers 0 and 2 are killed once they acknowledged a random number of operations.
    /// Then every key's last acknowledged state must hold (uncapped) or the key read back
    /// right or be gone (capped), shared keys must hold a value some writer set, and fsck
    /// must find no error.
    private func runWriters(mode: String, seed: UInt64) throws {
        let dir = TemporaryDirectory()
        var generator = SeededGenerator(seed: seed)
        var state: [String: Int?] = [:]        // private key → number it holds, nil when removed
        var uncertain: Set<String> = []        // keys of operations in flight at a kill
        var sharedSet: Set<Int> = []           // every n a writer began to store in a shared key
        let capped = mode == "shared-capped"
        for round in 0..<2 {
            nonisolated(unsafe) let writers = try (0..<4).map { index in
                let next = (round * 4 + index + 1) * 1_000_000
                return try ChildProcess(arguments: [dir.path, mode, "\(seed &* 31 &+ UInt64(round * 4 + index))", "\(next)"])
            }
            let killAfter = (0..<4).map { $0 % 2 == 0 ? Int(generator.next() % 300) + 20 : Int.max }
            let logs = Locked([[String]](repeating: [], count: 4))
            DispatchQueue.concurrentPerform(iterations: 4) { index in
                var acknowledged = 0
                while let line = writers[index].readLine() {
                    logs.withLock { $0[index].append(line) }
                    if line.hasPrefix("ok ") { acknowledged += 1 }
                    if acknowledged == killAfter[index] { writers[index].kill() }
                }
            }
            for (index, writer) in writers.enumerated() {
                let status = writer.wait()
                let lines = logs.withLock { $0[index] }
                #expect(!lines.contains { $0.hasPrefix("error") }, "writer \(index): \(lines.filter { $0.hasPrefix("error") })")
                if killAfter[index] == .max { #expect(status == 0 && lines.last == "done", "writer \(index) exited \(status)") }
                var inFlight: String?
                for line in lines {
                    let parts = line.split(separator: " ").map(String.init)
                    switch (parts.first, parts.count) {
                    case ("do", 3...): inFlight = parts[2]; if parts[1] == "sset" { sharedSet.insert(Int(parts[3])!) }
                    case ("ok", 3...):
                        inFlight = nil
                        if parts[1] == "set" { state[parts[2]] = Int(parts[2].dropFirst(4))! }
                        if parts[1] == "rm" { state[parts[2]] = .some(nil) }
                    default: break
                    }
                }
                if let inFlight, inFlight.hasPrefix("key-") { uncertain.insert(inFlight) }
            }
        }
        let report = try BlobCache.check(directory: dir.path)
        #expect(report.errors.isEmpty, "\(report.errors)")
        var configuration = BlobCache.Configuration()
        if capped { configuration.maxStoredBytes = 512 << 10 }
        let cache = try BlobCache(directory: dir.path, configuration: configuration)
        defer { try? cache.close() }
        var checked = 0
        for (key, holds) in state where !uncertain.contains(key) {
            let bytes = try cache.bytes(forKey: key)
            if let n = holds {
                if capped {
                    #expect(bytes == nil || bytes == CrashRun.expectedValue(n), "\(key)")
                } else {
                    #expect(bytes == CrashRun.expectedValue(n), "\(key): \(bytes.map { "\($0.count) wrong bytes" } ?? "gone")")
                }
                checked += 1
            } else {
                #expect(bytes == nil, "\(key) was removed")
            }
        }
        #expect(checked > 100)
        for j in 0..<16 {
            guard let bytes = try cache.bytes(forKey: "shared-\(j)") else { continue }
            let n = Int(bytes.prefix(8).reduce(UInt64(0)) { $0 << 8 | UInt64($1) })
            #expect(sharedSet.contains(n) && n % 16 == j && Array(bytes.dropFirst(8)) == CrashRun.expectedValue(n), "shared-\(j)")
        }
        if capped { #expect(try cache.totals().storedBytes <= 512 << 10) }
    }
}
