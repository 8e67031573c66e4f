import Foundation
import Testing
@testable import BlobCache

@Suite("blobcache fsck and compact", .serialized, .disabled(if: underThreadSanitizer, childProcessesUnderTSan))
struct FsckTests {
    enum Damage: String, CaseIterable, CustomTestStringConvertible {
        case flipLooseByte, truncateLoose, deleteLoose, flipPackedByte, strayFile, tempFile,
             cutJournalMidRecord, flipJournalByte, wipeJournalHeader,
             flipSnapshotByte, forgedSnapshot, staleSnapshot
        var testDescription: String { rawValue }
    }

    /// Loose values (over the 64 KiB pack threshold) and packed ones, by key.
    static let values: [String: [UInt8]] = {
        var values: [String: [UInt8]] = [:]
        for n in 0..<4 { values["loose-\(n)"] = Samples.random(70_000 + n, seed: UInt64(n)) }
        for n in 0..<4 { values["packed-\(n)"] = Samples.random(1000 + n, seed: UInt64(10 + n)) }
        return values
    }()

    /// Builds the cache through the CLI, in key order, one journal record per put.
    private func makeCache(_ cli: CLI) throws {
        for key in Self.values.keys.sorted() { try cli.run(["put", key], stdin: Data(Self.values[key]!)) }
    }

    private func loosePath(_ root: String, _ key: String) -> String { looseFile(root, BlobID(hashing: Self.values[key]!)) }

    /// Applies the damage; returns the problem id fsck must report, whether it is an error,
    /// and the keys whose entries the damage destroys (the rest must survive repair intact).
    private func damage(_ damage: Damage, _ root: String) throws -> (problem: String, error: Bool, lost: Set<String>) {
        let journal = root + "/journal"
        let journalSize = readFile(journal).count
        switch damage {
        case .flipLooseByte:
            flipByte(loosePath(root, "loose-1"), at: 5000)
            return ("blob-corrupt", true, ["loose-1"])
        case .truncateLoose:
            truncateFile(loosePath(root, "loose-2"), to: 1000)
            return ("blob-corrupt", true, ["loose-2"])
        case .deleteLoose:
            try FileManager.default.removeItem(atPath: loosePath(root, "loose-3"))
            return ("missing-blob", true, ["loose-3"])
        case .flipPackedByte:
            flipByte(root + "/packs/000001.pack", at: 16 + 40 + 10)   // payload of the first record
            return ("pack-record-corrupt", true, ["packed-0"])
        case .strayFile:
            try FileManager.default.createDirectory(atPath: root + "/objects/0/0", withIntermediateDirectories: true)
            writeFile(root + "/objects/0/0/not-a-blob", [1, 2, 3])
            return ("unknown-file", false, [])   // not the cache's: reported, left alone
        case .tempFile:
            try FileManager.default.createDirectory(atPath: root + "/objects/a/b", withIntermediateDirectories: true)
            writeFile(root + "/objects/a/b/tmp.1234.5678", [1, 2, 3])
            return ("stale-temp", false, [])
        case .cutJournalMidRecord:
            truncateFile(journal, to: journalSize - 5)
            return ("journal-torn-tail", true, ["packed-3"])   // the last put
        case .flipJournalByte:
            // The journal holds 8 set records in key order; flip a byte in the 6th (packed-1).
            let offsets = journalRecordOffsets(readFile(journal))
            flipByte(journal, at: offsets[5] + 12)
            return ("journal-checksum", true, ["packed-1", "packed-2", "packed-3"])
        case .wipeJournalHeader:
            patchFile(journal, at: 0, [UInt8](repeating: 0, count: 32))
            return ("journal-bad-header", true, Set(Self.values.keys))
        case .flipSnapshotByte:
            try writeSnapshot(root)
            flipByte(root + "/index", at: IndexSnapshot.page + 20)
            return ("snapshot-corrupt", true, [])
        case .forgedSnapshot:
            // Intact and tied to this journal, but saying something the journal does not.
            try writeSnapshot(root)
            let image = readFile(journal)
            let header = try image.withUnsafeBytes { try JournalFormat.decodeHeader($0).get() }
            var forged = CacheIndex()
            forged.upsert(EntryRecord(key: "forged", blob: BlobInfo(id: BlobID(hashing: [1]), codec: .none, rawLength: 1,
                                                                    payloadLength: 1, place: .loose),
                                      pinned: false, created: 0, expiry: Nanoseconds.never, access: 0), orderJournaled: true)
            writeFile(root + "/index", IndexSnapshot.encode(forged, journalSalt: header.salt, journalLength: Int64(image.count),
                                                            journalRecords: journalRecordOffsets(image).count))
            return ("snapshot-mismatch", true, [])
        case .staleSnapshot:
            try writeSnapshot(root)
            let snapshot = readFile(root + "/index")
            let cache = try BlobCache(directory: root)
            try cache.compact()     // a new journal (new salt); the snapshot goes with the old one
            try cache.close()
            writeFile(root + "/index", snapshot)
            return ("snapshot-stale", false, [])
        }
    }

    /// Opens and closes the cache with snapshots written at every close.
    private func writeSnapshot(_ root: String) throws {
        var configuration = BlobCache.Configuration()
        configuration.snapshotThreshold = 0
        try BlobCache(directory: root, configuration: configuration).close()
        #expect(FileManager.default.fileExists(atPath: root + "/index"))
    }

    @Test("fsck reports each kind of damage by its id, --repair fixes it, the next fsck is clean", arguments: Damage.allCases)
    func damageAndRepair(_ kind: Damage) throws {
        let dir = TemporaryDirectory()
        let cli = CLI(directory: dir.path)
        try makeCache(cli)
        #expect(try cli.run(["fsck"]).status == 0)
        let expected = try damage(kind, dir.path)

        let check = try cli.run(["fsck"])
        let problems = check.lines.dropLast().map { String($0.split(separator: " ")[0]) }
        #expect(problems.contains(expected.problem), "\(check.output)")
        #expect(check.status == (expected.error ? 4 : 0), "\(check.output)")
        #expect(check.lines.last?.hasPrefix("fsck: ") == true)
        let json = try JSONSerialization.jsonObject(with: try cli.run(["fsck", "--json"]).stdout) as! [String: Any]
        #expect((json["findings"] as! [[String: Any]]).contains { $0["problem"] as? String == expected.problem })
        if kind == .flipPackedByte {   // a record is named by its segment and offset
            let finding = (json["findings"] as! [[String: Any]]).first { $0["problem"] as? String == "pack-record-corrupt" }
            #expect(finding?["path"] as? String == dir.path + "/packs/000001.pack@16")
        }

        let repair = try cli.run(["fsck", "--repair"])
        #expect(repair.status == (expected.error ? 1 : 0), "\(repair.output)")
        let after = try cli.run(["fsck"])
        #expect(after.status == 0, "\(after.output)")
        // No findings, not even notes, but the foreign file that repair leaves where it is.
        #expect(after.lines.count == (kind == .strayFile ? 2 : 1), "\(after.output)")

        for (key, value) in Self.values where !expected.lost.contains(key) {
            let get = try cli.run(["get", key])
            #expect(get.status == 0 && get.stdout == Data(value), "\(key) after \(kind)")
        }
        if kind == .wipeJournalHeader {
            // Keys are gone with the header, but every intact blob is kept, readable by id.
            let cache = try BlobCache(directory: dir.path)
            for value in Self.values.values { #expect(same(try cache.bytes(for: BlobID(hashing: value)), value)) }
        }
    }

    @Test("fsck --fast skips the digest but still catches a checksum failure")
    func fast() throws {
        let dir = TemporaryDirectory()
        let cli = CLI(directory: dir.path)
        try makeCache(cli)
        flipByte(loosePath(dir.path, "loose-0"), at: 40)
        let result = try cli.run(["fsck", "--fast"])
        #expect(result.status == 4 && result.output.contains("blob-corrupt"))
    }

    @Test("a total over the limit is an error that repair trims")
    func overLimit() throws {
        let dir = TemporaryDirectory()
        let cli = CLI(directory: dir.path)
        try makeCache(cli)
        let check = try cli.run(["fsck", "--max-size", "100k"])
        #expect(check.status == 4 && check.output.contains("over-limit"))
        #expect(try cli.run(["fsck", "--repair", "--max-size", "100k"]).status == 1)
        #expect(try cli.run(["fsck", "--max-size", "100k"]).status == 0)
    }

    @Test("compact shrinks the journal after many overwrites and keeps every entry unchanged")
    func compactShrinks() throws {
        let dir = TemporaryDirectory()
        do {
            let cache = try BlobCache(directory: dir.path)
            for round in 0..<150 {
                for n in 0..<10 { try cache.set(Samples.random(500, seed: UInt64(round * 10 + n)), forKey: "k\(n)") }
            }
            try cache.close()
        }
        let cli = CLI(directory: dir.path)
        let before = readFile(dir.appending("journal")).count
        let result = try cli.run(["compact", "--json"])
        #expect(result.status == 0)
        let report = try JSONSerialization.jsonObject(with: result.stdout) as! [String: Any]
        #expect(report["journalRecordsAfter"] as? Int == 10)
        #expect(readFile(dir.appending("journal")).count < before / 10)
        for n in 0..<10 { #expect(try cli.run(["get", "k\(n)"]).stdout == Data(Samples.random(500, seed: UInt64(1490 + n)))) }
        #expect(try cli.run(["fsck"]).status == 0)
    }

    @Test("compact --recompress re-encodes every blob; ids and bytes do not change")
    func recompress() throws {
        let dir = TemporaryDirectory()
        let cli = CLI(directory: dir.path)
        let small = Data(Samples.compressible(3000)), large = Data(Samples.compressible(300_000))
        let ids = [try cli.run(["put", "s"], stdin: small).output, try cli.run(["put", "l"], stdin: large).output]
        let result = try cli.run(["compact", "--recompress", "zlib"])
        #expect(result.status == 0 && result.output.contains("blobs recompressed: 2"), "\(result.output)")
        let entries = try BlobCache(directory: dir.path).entries()
        #expect(entries.allSatisfy { $0.codec == "zlib" })
        #expect(entries.map { $0.blobID.hex + "\n" }.sorted() == ids.sorted())
        #expect(try cli.run(["get", "s"]).stdout == small)
        #expect(try cli.run(["get", "l"]).stdout == large)
        #expect(try cli.run(["fsck"]).status == 0)
        #expect(try cli.run(["compact", "--recompress", "none"]).output.contains("blobs recompressed: 2"))
        #expect(try cli.run(["get", "l"]).stdout == large)
        #expect(try cli.run(["fsck"]).status == 0)
    }

    @Test("a SIGKILL during compact is followed by a clean open and a clean fsck", arguments: 0..<6)
    func killedDuringCompact(round: Int) throws {
        let dir = TemporaryDirectory()
        do {
            let cache = try BlobCache(directory: dir.path, configuration: .testing { $0.packSegmentLimit = 1 << 16 })
            for n in 0..<3000 { try cache.set(Samples.random(200 + n % 900, seed: UInt64(n)), forKey: "k\(n % 400)") }
            try cache.close()
        }
        let expected = try BlobCache(directory: dir.path).entries().map { ($0.key, $0.blobID) }
        let process = Process()
        process.executableURL = ChildProcess.productsDirectory.appendingPathComponent("blobcache")
        process.arguments = ["--dir", dir.path, "compact", "--recompress", round % 2 == 0 ? "zlib" : "none"]
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        // Kill at a different point each round: after the child has done a varying amount of work,
        // observed through the journal or pack files changing (no sleeps, no timing assertions).
        var generator = SeededGenerator(seed: UInt64(round))
        let spins = Int(generator.next() % 2000)
        for _ in 0..<spins where process.isRunning { _ = FileManager.default.fileExists(atPath: dir.appending("journal.tmp")) }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()

        let cache = try BlobCache(directory: dir.path)
        let entries = try cache.entries().map { ($0.key, $0.blobID) }
        #expect(entries.map(\.0).sorted() == expected.map(\.0).sorted())
        for (key, id) in expected { #expect(try cache.bytes(forKey: key).map { BlobID(hashing: $0) } == id, "\(key)") }
        try cache.close()
        let fsck = try CLI(directory: dir.path).run(["fsck"])
        #expect(fsck.status == 0, "\(fsck.output)")
    }
}
