import Foundation
import Testing
import SystemPackage
import Crypto
@testable import BlobCache

/// Streams `bytes` into `cache` under `key` through a file descriptor, as a user would.
@discardableResult
func streamIn(_ cache: BlobCache, _ bytes: [UInt8], forKey key: String, in dir: TemporaryDirectory) throws -> BlobID {
    let path = dir.appending("source-\(UUID().uuidString)")
    writeFile(path, bytes)
    let fd = try FileDescriptor.open(path, .readOnly)
    defer { try? fd.close() }
    return try cache.set(contentsOf: fd, forKey: key)
}

/// The chunks a streamed read hands on, joined, and the error that ended it, if any.
func streamOut(_ cache: BlobCache, forKey key: String) -> (bytes: [UInt8], found: Bool, error: (any Error)?) {
    var received: [UInt8] = []
    do {
        let found = try cache.forEachChunk(forKey: key) { received += $0 }
        return (received, found, nil)
    } catch {
        return (received, true, error)
    }
}

/// The loose blob files under `root`'s objects directory.
func looseBlobFiles(_ root: String) -> [String] {
    filesBelow(root + "/objects").filter { !$0.hasPrefix("tmp.") && !($0.split(separator: "/").last ?? "").hasPrefix("tmp.") }
        .map { root + "/objects/" + $0 }
        .filter { (try? FileManager.default.attributesOfItem(atPath: $0)[.type] as? FileAttributeType) == .typeRegular }
}

@Suite("streaming: values of any size in bounded memory")
struct StreamingTests {
    /// Longer than a piece, not a whole number of pieces, half compressible.
    static let value = Samples.compressible(2_600_000, seed: 3) + Samples.random(2_700_000, seed: 4)

    @Test("a streamed value reads back the same, through every read, and is stored in pieces (format 4)")
    func roundTrip() throws {
        let dir = TemporaryDirectory()
        let cache = try BlobCache(directory: dir.path)
        let id = try streamIn(cache, Self.value, forKey: "big", in: dir)
        #expect(id == BlobID(hashing: Self.value))
        let out = streamOut(cache, forKey: "big")
        #expect(out.error == nil && out.bytes == Self.value)
        #expect(try cache.bytes(forKey: "big") == Self.value)
        let file = looseFile(dir.path, id)
        #expect(readFile(file)[4] == PiecedBlobFormat.version)
        try cache.close()
        let report = try BlobCache.check(directory: dir.path)
        #expect(report.findings.isEmpty, "\(report.findings)")
        #expect(report.blobsChecked == 1)
        let reopened = try BlobCache(directory: dir.path)
        #expect(streamOut(reopened, forKey: "big").bytes == Self.value)
    }

    @Test("values up to one piece keep the whole-value format, packed or loose", arguments: [0, 5, 70_000, 1 << 20])
    func smallValuesUnchanged(count: Int) throws {
        let dir = TemporaryDirectory()
        let cache = try BlobCache(directory: dir.path)
        let value = Samples.random(count, seed: 9)
        try streamIn(cache, value, forKey: "v", in: dir)
        #expect(try cache.bytes(forKey: "v") == value)
        #expect(streamOut(cache, forKey: "v").bytes == value)
        for file in looseBlobFiles(dir.path) { #expect(readFile(file)[4] == LooseBlobFormat.version) }
    }

    @Test("a streamed value and the same bytes set whole share one blob, both ways")
    func dedupAcrossPaths() throws {
        let dir = TemporaryDirectory()
        let cache = try BlobCache(directory: dir.path)
        try cache.set(Self.value, forKey: "whole")
        try streamIn(cache, Self.value, forKey: "streamed", in: dir)
        try streamIn(cache, Self.value, forKey: "streamed-again", in: dir)
        #expect(looseBlobFiles(dir.path).count == 1)
        #expect(try cache.statistics().deduplicatedSets == 2)
        for key in ["whole", "streamed", "streamed-again"] { #expect(streamOut(cache, forKey: key).bytes == Self.value) }
        #expect(filesBelow(dir.path).allSatisfy { !($0.split(separator: "/").last ?? "").hasPrefix("tmp.") })
    }

    @Test("a streamed value whose MD5 names a stored value with other bytes is refused, either way round")
    func collisionRefused() throws {
        let (a, b) = CollisionPair.extended(by: Samples.random(3_000_000, seed: 5))
        for streamedFirst in [false, true] {
            let dir = TemporaryDirectory()
            let cache = try BlobCache(directory: dir.path)
            if streamedFirst { try streamIn(cache, a, forKey: "a", in: dir) } else { try cache.set(a, forKey: "a") }
            #expect(throws: BlobCacheError.contentCollision(id: BlobID(hashing: a))) {
                try streamIn(cache, b, forKey: "b", in: dir)
            }
            #expect(try cache.bytes(forKey: "a") == a)
            #expect(try cache.bytes(forKey: "b") == nil)
            #expect(looseBlobFiles(dir.path).count == 1)
        }
    }

    @Test("a value over the byte cap fails once its stored bytes pass it, read no further, and stores nothing")
    func capStopsEarly() throws {
        let dir = TemporaryDirectory()
        let cache = try BlobCache(directory: dir.path, configuration: .testing { $0.maxStoredBytes = 3 << 20 })
        try cache.set(Array("kept".utf8), forKey: "other")
        let pending = try cache.startSet(forKey: "huge")
        let piece = Samples.random(1 << 20, seed: 6)
        var appended = 0
        var failure: (any Error)?
        while appended < 64 {
            do { try pending.append(piece) } catch {
                failure = error
                break
            }
            appended += 1
        }
        guard case .valueTooLarge(_, let limit)? = failure as? BlobCacheError else {
            Issue.record("expected valueTooLarge, got \(String(describing: failure))")
            return
        }
        #expect(limit == 3 << 20)
        // Checked against the bytes written, which trail the value by the two pieces in flight
        // (and a piece is handed on only once the next bytes arrive).
        #expect(appended <= 6)
        #expect(throws: BlobCacheError.setEnded) { try pending.finish() }
        #expect(try cache.keys() == ["other"])
        #expect(filesBelow(dir.path).allSatisfy { !($0.split(separator: "/").last ?? "").hasPrefix("tmp.") })
    }

    @Test("a cancelled or abandoned set stores nothing and leaves no staging file")
    func cancelled() throws {
        let dir = TemporaryDirectory()
        let cache = try BlobCache(directory: dir.path)
        do {
            let pending = try cache.startSet(forKey: "k")
            try pending.append(Self.value)
        }
        let pending = try cache.startSet(forKey: "k")
        try pending.append(Self.value)
        pending.cancel()
        #expect(try cache.keys().isEmpty)
        #expect(filesBelow(dir.path).allSatisfy { !($0.split(separator: "/").last ?? "").hasPrefix("tmp.") })
    }

    @Test("damage at the start, middle or end of a pieced blob: no unchecked byte is handed on, and the entries go",
          arguments: [0.0, 0.5, 0.999])
    func damageMidStream(at fraction: Double) throws {
        let dir = TemporaryDirectory()
        let cache = try BlobCache(directory: dir.path)
        let id = try streamIn(cache, Self.value, forKey: "big", in: dir)
        let file = looseFile(dir.path, id)
        let size = readFile(file).count
        flipByte(file, at: PiecedBlobFormat.firstPieceOffset + Int(Double(size - PiecedBlobFormat.firstPieceOffset - 1) * fraction))
        let out = streamOut(cache, forKey: "big")
        guard case .corruptBlob(let damagedID, _, _)? = out.error as? BlobCacheError else {
            Issue.record("expected corruptBlob, got \(String(describing: out.error))")
            return
        }
        #expect(damagedID == id)
        // Whatever was handed on is a prefix of the value, ending at a piece boundary.
        #expect(out.bytes == Array(Self.value.prefix(out.bytes.count)))
        #expect(out.bytes.count % PiecedBlobFormat.pieceSize == 0)
        #expect(out.bytes.count < Self.value.count)
        #expect(try cache.contains("big") == false)
    }

    @Test("a damaged header or prologue hands on nothing")
    func damagedHeader() throws {
        for offset in [4, 9, 20, 26, 33, 45, 50] {
            let dir = TemporaryDirectory()
            let cache = try BlobCache(directory: dir.path)
            let id = try streamIn(cache, Self.value, forKey: "big", in: dir)
            flipByte(looseFile(dir.path, id), at: offset, mask: 0x10)
            let out = streamOut(cache, forKey: "big")
            #expect(out.error != nil, "offset \(offset)")
            #expect(out.bytes.isEmpty, "offset \(offset)")
        }
    }

    @Test("a truncated pieced blob is damage, found before the missing bytes")
    func truncated() throws {
        let dir = TemporaryDirectory()
        let cache = try BlobCache(directory: dir.path)
        let id = try streamIn(cache, Self.value, forKey: "big", in: dir)
        let file = looseFile(dir.path, id)
        truncateFile(file, to: readFile(file).count - 100)
        let out = streamOut(cache, forKey: "big")
        #expect(out.error != nil && out.bytes.isEmpty)
    }

    @Test("an encrypted cache streams too, and a pieced blob moved to another id's name hands on nothing")
    func encrypted() throws {
        let dir = TemporaryDirectory()
        let configuration = BlobCache.Configuration.testing { $0.encryption = .aesGCM(key: testKey) }
        let cache = try BlobCache(directory: dir.path, configuration: configuration)
        let other = Samples.random(3_000_000, seed: 8)
        let id = try streamIn(cache, Self.value, forKey: "big", in: dir)
        let otherID = try streamIn(cache, other, forKey: "other", in: dir)
        #expect(streamOut(cache, forKey: "big").bytes == Self.value)
        #expect(try cache.bytes(forKey: "other") == other)
        // The other blob's file put in place of this one's: sealed pieces open, but the binding
        // ties the file to its own id.
        try FileManager.default.removeItem(atPath: looseFile(dir.path, id))
        try FileManager.default.copyItem(atPath: looseFile(dir.path, otherID), toPath: looseFile(dir.path, id))
        let out = streamOut(cache, forKey: "big")
        #expect(out.error != nil && out.bytes.isEmpty)
    }

    @Test("set(contentsOf:) reads a pipe and /dev/null to their ends")
    func pipesAndDevNull() throws {
        let dir = TemporaryDirectory()
        let cache = try BlobCache(directory: dir.path)
        let empty = try FileDescriptor.open("/dev/null", .readOnly)
        defer { try? empty.close() }
        try cache.set(contentsOf: empty, forKey: "empty")
        #expect(try cache.bytes(forKey: "empty") == [])
        let (reader, writer) = try FileDescriptor.pipe()
        let value = Self.value
        let feeder = Thread {
            _ = try? writer.writeAll(value)
            try? writer.close()
        }
        feeder.start()
        defer { try? reader.close() }
        try cache.set(contentsOf: reader, forKey: "piped")
        #expect(try cache.bytes(forKey: "piped") == value)
    }

    @Test("write(forKey:to:) writes the value to a descriptor; a miss writes nothing")
    func writeToDescriptor() throws {
        let dir = TemporaryDirectory()
        let cache = try BlobCache(directory: dir.path)
        try streamIn(cache, Self.value, forKey: "big", in: dir)
        let path = dir.appending("out")
        let out = try FileDescriptor.open(path, .writeOnly, options: [.create, .truncate], permissions: .ownerReadWrite)
        #expect(try cache.write(forKey: "big", to: out))
        #expect(try cache.write(forKey: "absent", to: out) == false)
        try out.close()
        #expect(readFile(path) == Self.value)
    }

    @Test("a reader opened before the value is removed still reads it whole")
    func readerOutlivesRemoval() throws {
        let dir = TemporaryDirectory()
        let cache = try BlobCache(directory: dir.path)
        try streamIn(cache, Self.value, forKey: "big", in: dir)
        let reader = try #require(try cache.openValue(forKey: "big"))
        #expect(reader.length == Self.value.count)
        let first = try #require(try reader.next())
        try cache.removeValue(forKey: "big")
        var all = first
        while let chunk = try reader.next() { all += chunk }
        #expect(all == Self.value)
    }

    @Test("fsck checks a pieced blob's content against its name, a piece at a time")
    func fsckFindsAPiecedBlobUnderAnotherName() throws {
        let dir = TemporaryDirectory()
        let cache = try BlobCache(directory: dir.path)
        let id = try streamIn(cache, Self.value, forKey: "big", in: dir)
        let otherID = try streamIn(cache, Samples.random(3_000_000, seed: 11), forKey: "other", in: dir)
        try cache.close()
        try FileManager.default.removeItem(atPath: looseFile(dir.path, id))
        try FileManager.default.copyItem(atPath: looseFile(dir.path, otherID), toPath: looseFile(dir.path, id))
        let report = try BlobCache.check(directory: dir.path)
        #expect(report.errors.contains { $0.subject == id.hex && $0.detail.contains("hashes to \(otherID)") }, "\(report.findings)")
        #expect(report.blobsChecked == 2)
    }

    @Test("damage found part way drops the entries even when another blob was released meanwhile")
    func damageDroppedDespiteOtherReleases() throws {
        let dir = TemporaryDirectory()
        let cache = try BlobCache(directory: dir.path)
        let id = try streamIn(cache, Self.value, forKey: "big", in: dir)
        try cache.set(Samples.random(20_000, seed: 12), forKey: "unrelated")
        let file = looseFile(dir.path, id)
        flipByte(file, at: readFile(file).count - 10)
        let reader = try #require(try cache.openValue(forKey: "big"))
        _ = try reader.next()
        try cache.removeValue(forKey: "unrelated")   // a release: the read can no longer assume its file by count alone
        #expect(throws: BlobCacheError.self) { while try reader.next() != nil {} }
        #expect(try cache.contains("big") == false)
    }

    /// The codecs of a pieced blob file's pieces, in order.
    private func pieceCodecs(_ file: [UInt8]) -> [UInt8] {
        var codecs: [UInt8] = []
        var offset = PiecedBlobFormat.firstPieceOffset
        while offset + PiecedBlobFormat.pieceHeaderSize <= file.count {
            let stored = file[offset..<offset + 4].enumerated().reduce(0) { $0 | Int($1.element) << (8 * $1.offset) }
            codecs.append(file[offset + 12])
            offset += PiecedBlobFormat.pieceHeaderSize + stored
        }
        return codecs
    }

    @Test("a streamed value's pieces are stored raw from the piece where the value reaches storingRawFrom")
    func storingRawFromPerPiece() throws {
        let dir = TemporaryDirectory()
        let cache = try BlobCache(directory: dir.path, configuration: .testing {
            $0.compression = CompressionPolicy(codec: .lz4, storingRawFrom: 2 << 20)
        })
        let value = Samples.compressible(5 << 20, seed: 13)
        let id = try streamIn(cache, value, forKey: "big", in: dir)
        #expect(pieceCodecs(readFile(looseFile(dir.path, id))) == [1, 0, 0, 0, 0])
        #expect(streamOut(cache, forKey: "big").bytes == value)
    }

    @Test("compact --recompress and a rekey write a pieced blob again in pieces; both read back")
    func recompressAndRekeyKeepPieces() throws {
        let dir = TemporaryDirectory()
        let value = Samples.compressible(3 << 20, seed: 14)
        let plain = try BlobCache(directory: dir.path, configuration: .testing { $0.compression = .off })
        let id = try streamIn(plain, value, forKey: "big", in: dir)
        #expect(pieceCodecs(readFile(looseFile(dir.path, id))) == [0, 0, 0])
        let report = try plain.compact(recompressingTo: .lz4)
        #expect(report.blobsRecompressed == 1)
        #expect(pieceCodecs(readFile(looseFile(dir.path, id))) == [1, 1, 1])
        #expect(streamOut(plain, forKey: "big").bytes == value)
        _ = try plain.compact(rekeyingTo: .aesGCM(key: testKey))
        try plain.close()
        let encrypted = try BlobCache(directory: dir.path, configuration: .testing { $0.encryption = .aesGCM(key: testKey) })
        #expect(streamOut(encrypted, forKey: "big").bytes == value)
        let newID = try #require(try encrypted.entry(forKey: "big")?.blobID)
        #expect(readFile(looseFile(dir.path, newID))[4] == PiecedBlobFormat.version)
    }

    @Test("a destroyed journal header rebuilds from the blobs, pieced ones too")
    func rebuildAdoptsPiecedBlobs() throws {
        let dir = TemporaryDirectory()
        let cache = try BlobCache(directory: dir.path, configuration: .testing())
        let id = try streamIn(cache, Self.value, forKey: "big", in: dir)
        try cache.close()
        patchFile(dir.path + "/journal", at: 0, [UInt8](repeating: 0, count: JournalFormat.headerSize))
        let reopened = try BlobCache(directory: dir.path, configuration: .testing())
        guard case .rebuiltFromBlobs(_, let adopted, _) = reopened.openReport.recovery else {
            Issue.record("expected rebuiltFromBlobs, got \(reopened.openReport.recovery)")
            return
        }
        #expect(adopted == 1)
        #expect(try reopened.bytes(for: id) == Self.value)
    }

    @Test("fsck without the key checks an encrypted pieced blob's checksums")
    func fsckWithoutKeyChecksPieces() throws {
        let dir = TemporaryDirectory()
        let cache = try BlobCache(directory: dir.path, configuration: .testing { $0.encryption = .aesGCM(key: testKey) })
        let id = try streamIn(cache, Self.value, forKey: "big", in: dir)
        try cache.close()
        #expect(try BlobCache.check(directory: dir.path).errors.isEmpty)
        let file = looseFile(dir.path, id)
        flipByte(file, at: readFile(file).count / 2)
        let report = try BlobCache.check(directory: dir.path)
        #expect(report.errors.contains { $0.subject == id.hex && $0.detail.contains("XXH3") }, "\(report.findings)")
    }
}
