import Crypto
import Foundation
import SystemPackage
import Testing
@testable import BlobCache

/// The key the encryption tests (and the model test's encrypted run) use.
let testKey = SymmetricKey(data: [UInt8](repeating: 0x42, count: 32))
private let otherKey = SymmetricKey(data: (0..<32).map { UInt8($0) })

/// Encryption at rest (docs/SECURITY.md, "Encryption at rest"): nothing readable on disk,
/// every sealed byte checked, keys that do not fit refused without a change.
@Suite("Encryption at rest")
struct EncryptionTests {
    private func encrypted(_ key: SymmetricKey = testKey, _ change: (inout BlobCache.Configuration) -> Void = { _ in })
        -> BlobCache.Configuration {
        .testing {
            $0.encryption = .aesGCM(key: key)
            $0.snapshotThreshold = 0   // a snapshot at every close
            change(&$0)
        }
    }

    /// Values of every kind: 16 bytes exactly, small (packed), compressible and not, large (loose).
    private let values: [[UInt8]] = [
        Array("sixteen-byte-val".utf8), Array("a small distinctive value: token=3f9a77".utf8),
        Samples.compressible(5_000, seed: 3), Samples.random(40_000, seed: 4),
        Samples.compressible(700_000, seed: 5), Samples.random(300_000, seed: 6),
    ]

    private func key(_ n: Int) -> String { "distinctive-key-\(n)-Ωmega" }

    /// Fills a cache with `values` under `key(n)`, plus a namespace's entry, a content-addressed
    /// value, an overwrite, an access and a remove (so the journal holds every record type).
    private func fill(_ cache: BlobCache) throws {
        for (n, value) in values.enumerated() { try cache.set(value, forKey: key(n)) }
        try cache.namespace("tenant-secret-ns").set(values[1], forKey: "ns-key-distinctive")
        try cache.store(Array("content addressed distinctive bytes".utf8))
        try cache.set(values[2], forKey: key(0))
        try cache.set(values[0], forKey: "overwritten-then-removed")
        _ = try cache.bytes(forKey: key(3))
        try cache.removeValue(forKey: "overwritten-then-removed")
    }

    @Test("no value of 16 bytes or more, no key and no MD5 of a value appears in any file or name")
    func nothingInPlainText() throws {
        let dir = TemporaryDirectory()
        let cache = try BlobCache(directory: dir.path, configuration: encrypted())
        try fill(cache)
        try cache.close()
        let files = regularFiles(under: dir.path)
        #expect(files.keys.contains("index") && files.keys.contains("journal") && files.keys.contains { $0.hasPrefix("objects/") }
                && files.keys.contains { $0.hasPrefix("packs/") })
        let secrets = values + [Array("content addressed distinctive bytes".utf8)]
        let names = (0..<values.count).map(key) + ["tenant-secret-ns", "ns-key-distinctive", "overwritten-then-removed"]
        for (path, bytes) in files {
            let haystack = Data(bytes)
            for value in secrets {
                // Every 16-byte window, at a stride that covers a short value whole.
                for start in stride(from: 0, through: value.count - 16, by: max(8, value.count / 256)) {
                    #expect(haystack.range(of: Data(value[start..<start + 16])) == nil, "\(path) holds bytes of a value")
                }
                let md5 = BlobID(hashing: value)
                #expect(haystack.range(of: Data(md5.digestBytes)) == nil && !path.contains(md5.hex), "\(path): the MD5 of a value")
            }
            for name in names {
                #expect(haystack.range(of: Data(name.utf8)) == nil, "\(path) holds the key \(name)")
            }
        }
        // And everything reads back, from the sealed snapshot.
        let reopened = try BlobCache(directory: dir.path, configuration: encrypted())
        #expect(reopened.openReport.restoredFromSnapshot)
        for (n, value) in values.enumerated() where n != 0 { #expect(try reopened.bytes(forKey: key(n)) == value) }
        #expect(try reopened.bytes(forKey: key(0)) == values[2])
        #expect(try reopened.namespace("tenant-secret-ns").bytes(forKey: "ns-key-distinctive") == values[1])
        #expect(try reopened.bytes(forKey: "overwritten-then-removed") == nil)
        #expect(try BlobCache.check(directory: dir.path, options: checkOptions(testKey)).findings.isEmpty)
    }

    @Test("ids are keyed: not the MD5, the same under one key, different under another; dedup still works")
    func keyedIDs() throws {
        let one = TemporaryDirectory(), two = TemporaryDirectory(), three = TemporaryDirectory()
        let value = values[1]
        let a = try BlobCache(directory: one.path, configuration: encrypted())
        let b = try BlobCache(directory: two.path, configuration: encrypted())
        let c = try BlobCache(directory: three.path, configuration: encrypted(otherKey))
        let id = try a.set(value, forKey: "x")
        #expect(id != BlobID(hashing: value))
        #expect(try b.set(value, forKey: "y") == id)
        #expect(try c.set(value, forKey: "y") != id)
        #expect(try a.set(value, forKey: "x2") == id)
        #expect(try a.totals().blobs == 1)
        #expect(try a.bytes(for: id) == value)
        for cache in [a, b, c] { try cache.close() }
    }

    @Test("no key, the wrong key, a key for a plain cache: a clear error, and not one byte on disk changes")
    func wrongKeysChangeNothing() throws {
        let dir = TemporaryDirectory(), plain = TemporaryDirectory()
        let cache = try BlobCache(directory: dir.path, configuration: encrypted())
        try fill(cache)
        try cache.close()
        let plainCache = try BlobCache(directory: plain.path, configuration: .testing())
        try plainCache.set(values[1], forKey: "k")
        try plainCache.close()
        let before = regularFiles(under: dir.path), plainBefore = regularFiles(under: plain.path)

        #expect(throws: BlobCacheError.encryptionKeyRequired(path: dir.path)) { try BlobCache(directory: dir.path, configuration: .testing()) }
        #expect(throws: BlobCacheError.wrongEncryptionKey(path: dir.path)) { try BlobCache(directory: dir.path, configuration: encrypted(otherKey)) }
        #expect(throws: BlobCacheError.cacheNotEncrypted(path: plain.path)) { try BlobCache(directory: plain.path, configuration: encrypted()) }
        #expect(throws: BlobCacheError.wrongEncryptionKey(path: dir.path)) {
            try BlobCache.check(directory: dir.path, options: checkOptions(otherKey))
        }
        #expect(throws: BlobCacheError.encryptionKeyRequired(path: dir.path)) {
            var options = BlobCache.CheckOptions()
            options.repair = true
            return try BlobCache.check(directory: dir.path, options: options)
        }
        // A key of the wrong size is a configuration error.
        #expect(throws: BlobCacheError.self) {
            try BlobCache(directory: dir.path, configuration: .testing { $0.encryption = .aesGCM(key: SymmetricKey(size: .bits128)) })
        }
        // Without the key, fsck checks what it can and says what it could not.
        let report = try BlobCache.check(directory: dir.path, options: BlobCache.CheckOptions())
        #expect(report.errors.isEmpty && report.notes.map(\.problem) == ["encrypted-unchecked"] && report.blobsChecked > 0)

        #expect(regularFiles(under: dir.path) == before)
        #expect(regularFiles(under: plain.path) == plainBefore)
        let reopened = try BlobCache(directory: dir.path, configuration: encrypted())
        #expect(try reopened.bytes(forKey: key(4)) == values[4])
        try reopened.close()
    }

    @Test("a journal header lost: the wrong key deletes no blob, the right key rebuilds from them")
    func rebuildNeedsTheKey() throws {
        let dir = TemporaryDirectory()
        let cache = try BlobCache(directory: dir.path, configuration: encrypted())
        let ids = try values.enumerated().map { try cache.set($1, forKey: key($0)) }
        try cache.close()
        let journal = dir.appending("journal")
        var bytes = readFile(journal)
        bytes[0] ^= 0xFF
        try Data(bytes).write(to: URL(fileURLWithPath: journal))
        try? FileManager.default.removeItem(atPath: dir.appending("index"))
        let blobsBefore = regularFiles(under: dir.path).filter { $0.key.hasPrefix("objects/") || $0.key.hasPrefix("packs/") }
        #expect(throws: BlobCacheError.wrongEncryptionKey(path: dir.path)) { try BlobCache(directory: dir.path, configuration: encrypted(otherKey)) }
        #expect(throws: BlobCacheError.encryptionKeyRequired(path: dir.path)) { try BlobCache(directory: dir.path, configuration: .testing()) }
        #expect(regularFiles(under: dir.path).filter { $0.key.hasPrefix("objects/") || $0.key.hasPrefix("packs/") } == blobsBefore)
        let rebuilt = try BlobCache(directory: dir.path, configuration: encrypted())
        guard case .rebuiltFromBlobs = rebuilt.openReport.recovery else {
            Issue.record("expected a rebuild, got \(rebuilt.openReport.recovery)")
            return
        }
        for (n, id) in ids.enumerated() { #expect(try rebuilt.bytes(for: id) == values[n]) }
        try rebuilt.close()
    }

    @Test("a changed byte in any sealed file, even with its outer checksum made to match, is damage: never wrong bytes",
          arguments: ["loose blob", "pack record", "journal record", "snapshot", "tag"])
    func flippedBytesAreDetected(place: String) throws {
        let dir = TemporaryDirectory()
        let cache = try BlobCache(directory: dir.path, configuration: encrypted())
        try cache.set(values[1], forKey: "small")         // packed: the first record of packs/000001.pack
        try cache.set(values[5], forKey: "large")         // loose
        try cache.close()
        let files = regularFiles(under: dir.path)
        let loosePath = files.keys.first { $0.hasPrefix("objects/") }!
        switch place {
        case "loose blob", "tag":
            var file = files[loosePath]!
            let at = place == "tag" ? file.count - 3 : LooseBlobFormat.headerSize + CacheCipher.nonceSize + 1000
            file[at] ^= 0x01
            // The outer checksum made to match: only the seal can tell.
            let digest = file.withUnsafeBytes {
                LooseBlobFormat.checksum(of: UnsafeRawBufferPointer(rebasing: $0[32...]), after: UnsafeRawBufferPointer(rebasing: $0[0..<24]))
            }
            withUnsafeBytes(of: digest.littleEndian) { file.replaceSubrange(24..<32, with: $0) }
            try Data(file).write(to: URL(fileURLWithPath: dir.appending(loosePath)))
        case "pack record":
            var file = files["packs/000001.pack"]!
            let record = PackFormat.segmentHeaderSize
            file[record + PackFormat.recordHeaderSize + CacheCipher.nonceSize + 3] ^= 0x80
            let payloadLength = Int(file.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: record + 32, as: UInt32.self) })
            let checksum = file.withUnsafeBytes {
                PackFormat.RecordChecksum.xxh64.value(head: UnsafeRawBufferPointer(rebasing: $0[record..<record + 36]),
                                                      payload: UnsafeRawBufferPointer(rebasing: $0[record + 40..<record + 40 + payloadLength]))
            }
            withUnsafeBytes(of: checksum.littleEndian) { file.replaceSubrange(record + 36..<record + 40, with: $0) }
            try Data(file).write(to: URL(fileURLWithPath: dir.appending("packs/000001.pack")))
        case "journal record":
            // The last record (the clean close's), CRC recomputed.
            var file = files["journal"]!
            var offset = JournalFormat.headerSize, last = offset
            while offset < file.count {
                last = offset
                offset += JournalFormat.frameSize + Int(file.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: offset, as: UInt32.self) })
            }
            file[last + JournalFormat.frameSize + CacheCipher.nonceSize] ^= 0x04
            let salt = file.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: 8, as: UInt64.self) }
            let crc = file.withUnsafeBytes { CRC32.update(JournalFormat.seed(salt: salt), UnsafeRawBufferPointer(rebasing: $0[(last + 8)...])) }
            withUnsafeBytes(of: crc.littleEndian) { file.replaceSubrange(last + 4..<last + 8, with: $0) }
            try Data(file).write(to: URL(fileURLWithPath: dir.appending("journal")))
            try? FileManager.default.removeItem(atPath: dir.appending("index"))
        default:
            var file = files["index"]!
            file[IndexSnapshot.sealedHeaderSize + CacheCipher.nonceSize + 100] ^= 0x10
            try Data(file).write(to: URL(fileURLWithPath: dir.appending("index")))
        }
        let reopened = try BlobCache(directory: dir.path, configuration: encrypted())
        defer { try? reopened.close() }
        if place == "journal record" {
            guard case .stoppedAtCorruption = reopened.openReport.recovery else {
                Issue.record("expected the damaged record to stop replay, got \(reopened.openReport.recovery)")
                return
            }
        }
        if place == "snapshot" { #expect(!reopened.openReport.restoredFromSnapshot) }
        for (key, value) in [("small", values[1]), ("large", values[5])] {
            do {
                let read = try reopened.bytes(forKey: key)
                #expect(read == nil || read == value, "\(place): \(key) read wrong bytes")
                let damaged = (place == "pack record" && key == "small") || (["loose blob", "tag"].contains(place) && key == "large")
                #expect(!damaged, "\(place): \(key) read despite the damage")
            } catch let error as BlobCacheError {
                guard case .corruptBlob = error else { throw error }
            }
        }
        if place == "snapshot" {
            #expect(try reopened.bytes(forKey: "small") == values[1] && reopened.bytes(forKey: "large") == values[5])
        }
        if place == "journal record" { #expect(try reopened.bytes(forKey: "small") == values[1]) }
    }

    @Test("repair keeps every intact encrypted loose blob: it checks each payload before opening it in place")
    func repairKeepsIntactLooseBlobs() throws {
        let dir = TemporaryDirectory()
        // Every value loose: small and large LZ4 ones, and one stored raw.
        let kept = [Samples.compressible(5_000, seed: 21), Samples.compressible(200_000, seed: 22),
                    Samples.compressible(700_000, seed: 23), Samples.random(300_000, seed: 24)]
        let configuration = encrypted { $0.packThreshold = 0 }
        let cache = try BlobCache(directory: dir.path, configuration: configuration)
        for (index, value) in kept.enumerated() { try cache.set(value, forKey: key(index)) }
        let before = Set(regularFiles(under: dir.path).keys.filter { $0.hasPrefix("objects/") })
        #expect(before.count == kept.count)
        // One more, whose checksum field is flipped, so that there is something to repair.
        try cache.set(Samples.compressible(9_000, seed: 25), forKey: "doomed")
        try cache.close()
        let doomed = try #require(Set(regularFiles(under: dir.path).keys.filter { $0.hasPrefix("objects/") }).subtracting(before).first)
        var file = readFile(dir.appending(doomed))
        file[24] ^= 0x01   // the checksum field
        try Data(file).write(to: URL(fileURLWithPath: dir.appending(doomed)))

        var repairing = checkOptions(testKey)
        repairing.repair = true
        let repaired = try BlobCache.check(directory: dir.path, options: repairing)
        #expect(repaired.repaired && repaired.errors.count == 1 && repaired.errorsLeft.isEmpty, "\(repaired.findings)")
        let reopened = try BlobCache(directory: dir.path, configuration: configuration)
        for (index, value) in kept.enumerated() { #expect(try reopened.bytes(forKey: key(index)) == value, "value \(index)") }
        #expect(try reopened.bytes(forKey: "doomed") == nil)
        try reopened.close()
    }

    @Test("a read checks a sealed blob by its tag alone: a damaged outer checksum still gives the true bytes; fsck reports it and repair clears it")
    func readsTrustTheTag() throws {
        let dir = TemporaryDirectory()
        let cache = try BlobCache(directory: dir.path, configuration: encrypted())
        try cache.set(values[1], forKey: "small")         // packed
        try cache.set(values[5], forKey: "large")         // loose
        try cache.close()
        let files = regularFiles(under: dir.path)
        let loosePath = files.keys.first { $0.hasPrefix("objects/") }!
        var loose = files[loosePath]!
        loose[24] ^= 0x01                                  // the checksum field
        try Data(loose).write(to: URL(fileURLWithPath: dir.appending(loosePath)))
        var pack = files["packs/000001.pack"]!
        pack[PackFormat.segmentHeaderSize + 36] ^= 0x01    // the record checksum field
        try Data(pack).write(to: URL(fileURLWithPath: dir.appending("packs/000001.pack")))

        let reopened = try BlobCache(directory: dir.path, configuration: encrypted())
        #expect(try reopened.bytes(forKey: "small") == values[1])
        #expect(try reopened.bytes(forKey: "large") == values[5])
        try reopened.close()
        let report = try BlobCache.check(directory: dir.path, options: checkOptions(testKey))
        #expect(report.errors.count == 2, "\(report.findings)")
        #expect(report.errors.allSatisfy { $0.detail.contains("mismatch") }, "\(report.errors)")

        // Repair checks what fsck checks: it drops the entries fsck reported (as for a plain
        // blob with a damaged checksum), and fsck then finds nothing left.
        var repairing = checkOptions(testKey)
        repairing.repair = true
        let repaired = try BlobCache.check(directory: dir.path, options: repairing)
        #expect(repaired.repaired && repaired.errorsLeft.isEmpty, "\(repaired.errorsLeft)")
        #expect(try BlobCache.check(directory: dir.path, options: checkOptions(testKey)).errors.isEmpty)
        // (A changed payload byte is the tag's to catch: flippedBytesAreDetected.)
    }

    private func checkOptions(_ key: SymmetricKey) -> BlobCache.CheckOptions {
        var options = BlobCache.CheckOptions()
        options.encryption = .aesGCM(key: key)
        return options
    }
}

/// Every regular file under `root`, by its path relative to `root`.
func regularFiles(under root: String) -> [String: [UInt8]] {
    var files: [String: [UInt8]] = [:]
    guard let walker = FileManager.default.enumerator(atPath: root) else { return files }
    while let relative = walker.nextObject() as? String {
        var info = stat()
        guard lstat(root + "/" + relative, &info) == 0, info.st_mode & S_IFMT == S_IFREG else { continue }
        files[relative] = readFile(root + "/" + relative)
    }
    return files
}

/// Defects a review of the encryption change found; each test failed before its fix.
@Suite("Encryption: reviewed defects")
struct EncryptionDefectTests {
    private func encrypted(_ key: SymmetricKey = testKey) -> BlobCache.Configuration {
        .testing { $0.encryption = .aesGCM(key: key) }
    }

    /// Rewrites the journal header of the cache in `dir` with `change`, its CRC fixed.
    private func patchHeader(_ dir: TemporaryDirectory, _ change: (inout [UInt8]) -> Void) throws {
        let path = dir.appending("journal")
        var bytes = readFile(path)
        change(&bytes)
        let crc = CRC32.checksum(Array(bytes[0..<28]))
        bytes.replaceSubrange(28..<32, with: withUnsafeBytes(of: crc.littleEndian, Array.init))
        try Data(bytes).write(to: URL(fileURLWithPath: path))
    }

    @Test("a key that passes the header's key check by chance is refused, not taken for damage")
    func keyCheckCollision() throws {
        let dir = TemporaryDirectory()
        let cache = try BlobCache(directory: dir.path, configuration: encrypted())
        try cache.set([1, 2, 3], forKey: "k")
        try cache.close()
        // Forge the check so that the other key passes it, as one key in 2^32 does.
        let other = SymmetricKey(data: [UInt8](repeating: 0x77, count: 32))
        try patchHeader(dir) { bytes in
            let salt = bytes.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: 8, as: UInt64.self) }
            let check = try! CacheCipher(.aesGCM(key: other)).keyCheck(salt: salt)
            bytes.replaceSubrange(24..<28, with: withUnsafeBytes(of: check.littleEndian, Array.init))
        }
        let journal = readFile(dir.appending("journal"))
        #expect(throws: BlobCacheError.wrongEncryptionKey(path: dir.path)) { try BlobCache(directory: dir.path, configuration: encrypted(other)) }
        #expect(readFile(dir.appending("journal")) == journal)
    }

    @Test("a header flag this release does not know is a newer format, never a rebuild")
    func unknownFlag() throws {
        let dir = TemporaryDirectory()
        let cache = try BlobCache(directory: dir.path, configuration: encrypted())
        try cache.set([1], forKey: "k")
        try cache.close()
        try patchHeader(dir) { $0[7] |= 0x80 }
        let journal = readFile(dir.appending("journal"))
        #expect(throws: BlobCacheError.unsupportedFormat(path: dir.appending("journal"), version: 2)) {
            try BlobCache(directory: dir.path, configuration: encrypted())
        }
        #expect(readFile(dir.appending("journal")) == journal)
    }

    @Test("a lost journal beside sealed blobs and plain ones: no key refuses, and no blob is deleted")
    func rebuildKeepsWhatItCannotOpen() throws {
        let plain = TemporaryDirectory(), sealed = TemporaryDirectory()
        let a = try BlobCache(directory: plain.path, configuration: .testing { $0.packThreshold = 0 })
        try a.set(Samples.random(5000, seed: 1), forKey: "plain")
        try a.close()
        let b = try BlobCache(directory: sealed.path, configuration: .testing { $0.packThreshold = 0; $0.encryption = .aesGCM(key: testKey) })
        let id = try b.set(Samples.random(5000, seed: 2), forKey: "sealed")
        try b.close()
        // The state a plain-to-encrypted rekey killed after its commit leaves, its journal then lost.
        let from = sealed.appending("objects/\(id.hex.prefix(1))/\(id.hex.dropFirst().prefix(1))")
        try FileManager.default.createDirectory(atPath: plain.appending("objects/\(id.hex.prefix(1))"), withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: from, toPath: plain.appending("objects/\(id.hex.prefix(1))/\(id.hex.dropFirst().prefix(1))"))
        try FileManager.default.removeItem(atPath: plain.appending("journal"))
        let blobs = { regularFiles(under: plain.path).filter { $0.key.hasPrefix("objects/") } }
        let before = blobs()
        #expect(before.count == 2)
        #expect(throws: BlobCacheError.encryptionKeyRequired(path: plain.path)) { try BlobCache(directory: plain.path, configuration: .testing()) }
        #expect(blobs() == before)
        let rebuilt = try BlobCache(directory: plain.path, configuration: encrypted())
        #expect(try rebuilt.bytes(for: id) == Samples.random(5000, seed: 2))
        #expect(blobs() == before)
        try rebuilt.close()
    }

    @Test("a sealed snapshot is read only when its bytes are real and few: no overflow, no allocation for a sparse file")
    func sealedSnapshotBounds() throws {
        let dir = TemporaryDirectory()
        let path = dir.appending("index")
        let fd = open(path, O_CREAT | O_WRONLY, 0o600)
        #expect(fd >= 0)
        _ = Array("BCIS".utf8 + [1, 0, 0, 0]).withUnsafeBytes { write(fd, $0.baseAddress, 8) }
        #expect(ftruncate(fd, 1 << 30) == 0)   // 1 GiB claimed, 8 bytes real
        close(fd)
        let cipher = try CacheCipher(.aesGCM(key: testKey))
        for journalSize in [Int64(1) << 40, Int64.max / 2, Int64.max] {
            let result = try IndexSnapshot.map(CachePath(path), io: .posix, journalSize: journalSize, cipher: cipher)
            guard case .failure(.sizeMismatch) = result else {
                Issue.record("journal of \(journalSize) bytes: \(String(describing: result))")
                continue
            }
        }
    }

    @Test("a FIFO where the journal belongs fails the open and fsck instead of blocking them")
    func fifoJournal() throws {
        let dir = TemporaryDirectory()
        let cache = try BlobCache(directory: dir.path, configuration: .testing())
        try cache.set([1], forKey: "k")
        try cache.close()
        try FileManager.default.removeItem(atPath: dir.appending("journal"))
        #expect(mkfifo(dir.appending("journal"), 0o600) == 0)
        #expect(throws: BlobCacheError.self) { try BlobCache(directory: dir.path, configuration: .testing()) }
        let report = try BlobCache.check(directory: dir.path)
        #expect(!report.errors.isEmpty)
    }

    @Test("a rekey the new configuration cannot open (a remote tier) is refused before anything changes")
    func rekeyValidatesFirst() throws {
        let dir = TemporaryDirectory()
        let cache = try BlobCache(directory: dir.path, configuration: .testing { $0.remote = UnreachableRemote() })
        try cache.set([1, 2, 3], forKey: "k")
        let before = regularFiles(under: dir.path)
        #expect(throws: BlobCacheError.self) { try cache.compact(rekeyingTo: .aesGCM(key: testKey)) }
        #expect(regularFiles(under: dir.path) == before)
        #expect(try cache.bytes(forKey: "k") == [1, 2, 3])
        try cache.close()
        #expect(try BlobCache(directory: dir.path, configuration: .testing()).bytes(forKey: "k") == [1, 2, 3])
    }

    /// A remote tier whose server is down: every call fails (the cache counts and skips it).
    private struct UnreachableRemote: RemoteStore {
        struct Down: Error {}
        var description: String { "unreachable" }
        func get(_ object: RemoteObject) throws -> [UInt8]? { throw Down() }
        func exists(_ object: RemoteObject) throws -> Bool { throw Down() }
        func put(_ object: RemoteObject, bytes: [UInt8], expiresAt: Date?) throws { throw Down() }
        func delete(_ object: RemoteObject) throws { throw Down() }
    }

    @Test("sets racing a rekey on other threads are either refused or carried over, never lost")
    func setsRacingARekey() async throws {
        for round in 0..<20 {
            let dir = TemporaryDirectory()
            let cache = try BlobCache(directory: dir.path, configuration: encrypted())
            for n in 0..<20 { try cache.set(Samples.random(2000, seed: UInt64(n)), forKey: "seed\(n)") }
            let acknowledged = Locked([String: [UInt8]]())
            await withTaskGroup(of: Void.self) { group in
                for writer in 0..<4 {
                    group.addTask {
                        for n in 0..<50 {
                            let key = "w\(writer)-\(n)", value = Samples.random(1500 + n, seed: UInt64(1000 * writer + n))
                            guard (try? cache.set(value, forKey: key)) != nil else { return }
                            acknowledged.withLock { $0[key] = value }
                        }
                    }
                }
                group.addTask { _ = try? cache.compact(rekeyingTo: .aesGCM(key: SymmetricKey(data: [UInt8](repeating: 5, count: 32)))) }
            }
            let reopened = try BlobCache(directory: dir.path, configuration: encrypted(SymmetricKey(data: [UInt8](repeating: 5, count: 32))))
            for (key, value) in acknowledged.withLock({ $0 }) {
                #expect(try reopened.bytes(forKey: key) == value, "round \(round): \(key) acknowledged, then lost")
            }
            try reopened.close()
        }
    }
}
