import Foundation
import Testing
@testable import BlobCache

@Suite("Blob store")
struct BlobStoreTests {
    @Test("the id of \"hello\" is its MD5, and a loose blob lives at objects/5/d/<id>")
    func knownIDAndPath() throws {
        let dir = TemporaryDirectory()
        let id = BlobID(hashing: Array("hello".utf8))
        #expect(id.hex == "5d41402abc4b2a76b9719d911017c592")
        #expect(BlobID(hex: "5D41402ABC4B2A76B9719D911017C592") == id)
        #expect(BlobID(hex: "5d41402abc4b2a76b9719d911017c59") == nil)

        let cache = try BlobCache(directory: dir.path, configuration: .testing { $0.packThreshold = 0 })
        #expect(try cache.set(Array("hello".utf8), forKey: "greeting") == id)
        let file = dir.appending("objects/5/d/5d41402abc4b2a76b9719d911017c592")
        #expect(FileManager.default.fileExists(atPath: file))
        #expect(readFile(file).count == LooseBlobFormat.headerSize + 5)
        #expect(try cache.bytes(forKey: "greeting") == Array("hello".utf8))
        #expect(try cache.bytes(for: id) == Array("hello".utf8))
    }

    @Test("an id read where its digest lies, at any offset, is the id of those 16 bytes")
    func idReadInPlace() {
        let bytes = Samples.random(40, seed: 7)
        for offset in [0, 1, 7, 13, 24] {
            let digest = Array(bytes[offset..<offset + 16])
            let expected = BlobID(digestBytes: digest)!
            bytes.withUnsafeBytes { raw in
                #expect(BlobID(digestAt: offset, in: raw) == expected)
                var reader = BinaryReader(raw, offset: offset)
                #expect(reader.readBlobID() == expected)
            }
            #expect(expected.digestBytes == digest)
        }
    }

    @Test("storing a value that is already stored writes no blob bytes, loose or packed",
          arguments: [0, 64 * 1024])
    func dedupWritesNothing(packThreshold: Int) throws {
        let dir = TemporaryDirectory()
        let cache = try BlobCache(directory: dir.path, configuration: .testing { $0.packThreshold = packThreshold })
        let value = Samples.compressible(3000)
        try cache.set(value, forKey: "a")
        let before = try blobFileStats(dir.path)
        try cache.set(value, forKey: "b")
        try cache.set(value, forKey: "a")
        #expect(try blobFileStats(dir.path) == before)
        #expect(try cache.totals().blobs == 1)
        #expect(try cache.totals().entries == 2)
        #expect(try cache.bytes(forKey: "b") == value)
    }

    @Test("small values are packed and large ones loose, by stored size")
    func placement() throws {
        let dir = TemporaryDirectory()
        let cache = try BlobCache(directory: dir.path, configuration: .testing { $0.packThreshold = 4096 })
        try cache.set(Samples.random(1000), forKey: "small")
        try cache.set(Samples.random(5000), forKey: "large")
        try cache.set([UInt8](repeating: 7, count: 100_000), forKey: "compressible")   // compresses below 4 KiB
        #expect(try cache.entry(forKey: "small")?.place == .packed(segment: 1, offset: 16))
        #expect(try cache.entry(forKey: "large")?.place == .loose)
        if case .packed = try cache.entry(forKey: "compressible")!.place {} else { Issue.record("expected packed") }
        #expect(filesBelow(dir.appending("objects")).count == 1)
        #expect(filesBelow(dir.appending("packs")) == ["000001.pack"])
    }

    @Test("every single-byte corruption and every truncation of a loose blob is detected")
    func looseCorruptionExhaustive() throws {
        let value = Samples.compressible(60)
        let id = BlobID(hashing: value)
        for codec in [Codec.none, .zlib] {
            let blob = value.withUnsafeBytes { PreparedBlob.encoding($0, id: id, codec: codec, packThreshold: 0, cipher: nil) }
            let info = BlobInfo(id: id, codec: blob.codec, rawLength: value.count, payloadLength: blob.payloadLength, place: .loose)
            let image = blob.withImage(Array.init)
            #expect(image.withUnsafeBytes { LooseBlobFormat.decode(file: $0, expecting: info, cipher: nil) } == .success(value))
            for position in image.indices {
                for replacement in UInt8.min...UInt8.max where replacement != image[position] {
                    var damaged = image
                    damaged[position] = replacement
                    let result = damaged.withUnsafeBytes { LooseBlobFormat.decode(file: $0, expecting: info, cipher: nil) }
                    guard case .failure = result else {
                        Issue.record("byte \(position) = \(replacement) not detected (\(codec))")
                        return
                    }
                }
            }
            for length in 0..<image.count {
                let result = Array(image.prefix(length)).withUnsafeBytes { LooseBlobFormat.decode(file: $0, expecting: info, cipher: nil) }
                guard case .failure = result else {
                    Issue.record("truncation to \(length) not detected")
                    return
                }
            }
        }
    }

    @Test("a large LZ4 loose blob, decoded on every core, is never returned with a byte changed anywhere")
    func largeLooseCorruption() throws {
        let value = Samples.compressible(1 << 20) + Samples.random(300_000)
        let id = BlobID(hashing: value)
        let blob = value.withUnsafeBytes { PreparedBlob.hashingAndEncoding($0, codec: .lz4, packThreshold: 0, cipher: nil) }
        #expect(blob.id == id && blob.codec == .lz4 && !blob.packed)
        let info = BlobInfo(id: id, codec: blob.codec, rawLength: value.count, payloadLength: blob.payloadLength, place: .loose)
        let image = blob.withImage(Array.init)
        #expect(image.withUnsafeBytes { LZ4Frame(UnsafeRawBufferPointer(rebasing: $0[LooseBlobFormat.headerSize...]), rawCount: value.count) }?
            .blocks.count == 6, "six 256 KiB blocks, decoded in parallel")
        let intact = try image.withUnsafeBytes { LooseBlobFormat.decode(file: $0, expecting: info, cipher: nil) }.get() == value
        #expect(intact, "the undamaged blob reads back")
        // Some of these land in literals or offsets that still decode, to the right length but
        // wrong bytes: only the checksum stands between them and the caller.
        for position in stride(from: 0, to: image.count, by: image.count / 97) + [image.count - 1] {
            var damaged = image
            damaged[position] ^= 0x10
            let result = damaged.withUnsafeBytes { LooseBlobFormat.decode(file: $0, expecting: info, cipher: nil) }
            guard case .failure = result else {
                Issue.record("flipped bit at \(position) not detected")
                return
            }
        }
        for length in [0, 31, 32, image.count / 2, image.count - 1] {
            let result = Array(image.prefix(length)).withUnsafeBytes { LooseBlobFormat.decode(file: $0, expecting: info, cipher: nil) }
            #expect((try? result.get()) == nil, "truncation to \(length)")
        }
    }

    @Test("loose blobs of format versions 1 (CRC-32) and 2 (XXH64) are still read, checked and passed by fsck, large raw ones in pieces",
          arguments: [1, 2], [Codec.none, .lz4, .zlib])
    func earlierLooseBlobFormats(version: Int, codec: Codec) throws {
        let dir = TemporaryDirectory()
        let values = ["small": Samples.compressible(70_000), "large": Samples.compressible(600_000, seed: 2),
                      "raw": Samples.random(700_000, seed: 3)]
        let cache = try BlobCache(directory: dir.path, configuration: .testing { $0.packThreshold = 0; $0.codec = codec })
        for (key, value) in values {
            let id = try cache.set(value, forKey: key)
            let current = readFile(looseFile(dir.path, id))
            #expect(current[4] == LooseBlobFormat.version && LooseBlobFormat.version == 3)
            let old = version == 1 ? rewrittenAsVersionOne(current) : rewrittenAsVersionTwo(current)
            #expect(old[4] == UInt8(version) && old.count == current.count)
            let info = BlobInfo(id: id, codec: .none, rawLength: value.count, payloadLength: 0, place: .loose)
            let readBack = try old.withUnsafeBytes { LooseBlobFormat.decode(file: $0, expecting: info, cipher: nil) }.get() == value
            #expect(readBack, "\(key) in format \(version) reads back")
            var damaged = old
            damaged[damaged.count - 3] ^= 1
            #expect(damaged.withUnsafeBytes { LooseBlobFormat.decode(file: $0, expecting: info, cipher: nil) }
                    == .failure(.checksum(version == 1 ? "CRC mismatch" : "XXH64 mismatch")))
            writeFile(looseFile(dir.path, id), old)
        }
        try cache.close()
        let reopened = try BlobCache(directory: dir.path, configuration: .testing())
        for (key, value) in values {
            let readBack = try reopened.bytes(forKey: key) == value
            #expect(readBack, "\(key) reads back through the cache")
        }
        try reopened.close()
        #expect(try BlobCache.check(directory: dir.path).errors.isEmpty)
    }

    @Test("a damaged large raw blob of an earlier format is damage through the cache: an error, then a miss; fsck names it",
          arguments: [1, 2])
    func damagedEarlierFormats(version: Int) throws {
        let dir = TemporaryDirectory()
        let cache = try BlobCache(directory: dir.path, configuration: .testing { $0.packThreshold = 0 })
        let value = Samples.random(700_000, seed: 9)   // raw: read in pieces, hashed as they arrive (format 2)
        let id = try cache.set(value, forKey: "raw")
        try cache.set(Samples.random(1000, seed: 4), forKey: "other")
        try cache.close()
        let current = readFile(looseFile(dir.path, id))
        var old = version == 1 ? rewrittenAsVersionOne(current) : rewrittenAsVersionTwo(current)
        old[old.count - 1000] ^= 0x10
        writeFile(looseFile(dir.path, id), old)
        #expect(try BlobCache.check(directory: dir.path).errors.contains { $0.problem == "blob-corrupt" })
        let reopened = try BlobCache(directory: dir.path, configuration: .testing())
        #expect(throws: BlobCacheError.self) { _ = try reopened.bytes(forKey: "raw") }
        #expect(same(try reopened.bytes(forKey: "raw"), nil))
        #expect(same(try reopened.bytes(forKey: "other"), Samples.random(1000, seed: 4)))
        try reopened.close()
    }

    @Test("pack records checked with CRC-32 (earlier releases) are still read, moved by compaction and passed by fsck")
    func crcPackRecords() throws {
        let dir = TemporaryDirectory()
        let cache = try BlobCache(directory: dir.path, configuration: .testing())
        let values = (0..<3).map { Samples.compressible(5000, seed: UInt64($0 + 1)) }
        for (n, value) in values.enumerated() {
            try cache.set(value, forKey: "k\(n)")
            guard case .packed(let segment, let offset)? = try cache.entry(forKey: "k\(n)")?.place else {
                Issue.record("expected a packed blob")
                return
            }
            let path = dir.appending("packs/" + PackFormat.fileName(of: segment))
            let record = Array(readFile(path)[Int(offset)...]).withUnsafeBytes { all -> [UInt8] in
                let header = try! PackFormat.parseRecordHeader(all).get()
                #expect(header.checksumKind == .xxh64)
                return Array(all.prefix(PackFormat.recordHeaderSize + header.payloadLength))
            }
            let old = rewrittenWithCRC(record)
            #expect(same(try old.withUnsafeBytes { PackFormat.decode(record: $0, expecting: nil, cipher: nil) }.get(), value))
            var damaged = old
            damaged[damaged.count - 2] ^= 4
            #expect(damaged.withUnsafeBytes { PackFormat.decode(record: $0, expecting: nil, cipher: nil) } == .failure(.checksum("CRC mismatch")))
            patchFile(path, at: Int(offset), old)
        }
        try cache.close()
        #expect(try BlobCache.check(directory: dir.path).errors.isEmpty)
        let reopened = try BlobCache(directory: dir.path, configuration: .testing())
        let before = try reopened.entry(forKey: "k0")?.place
        #expect(try reopened.removeValue(forKey: "k1"))   // a dead record, so that compaction moves the others
        _ = try reopened.compact()
        #expect(try reopened.entry(forKey: "k0")?.place != before, "moved as it was, CRC and all")
        for n in [0, 2] { #expect(same(try reopened.bytes(forKey: "k\(n)"), values[n])) }
        try reopened.close()
        #expect(try BlobCache.check(directory: dir.path).errors.isEmpty)
    }

    /// A pack record as releases before checksum kinds wrote it: byte 21 zero and a CRC-32 of
    /// bytes 0..<36 and the payload in 36..<40.
    private func rewrittenWithCRC(_ record: [UInt8]) -> [UInt8] {
        var old = record
        old[21] = 0
        let crc = old.withUnsafeBytes {
            CRC32.update(CRC32.checksum(UnsafeRawBufferPointer(rebasing: $0[0..<36])), UnsafeRawBufferPointer(rebasing: $0[40...]))
        }
        old.replaceSubrange(36..<40, with: withUnsafeBytes(of: crc.littleEndian, Array.init))
        return old
    }

    /// A version 3 loose file as version 2 wrote it: the same fields, with the XXH64 of the
    /// payload seeded with the XXH64 of bytes 0..<24 in 24..<32.
    private func rewrittenAsVersionTwo(_ image: [UInt8]) -> [UInt8] {
        var old = image
        old[4] = 2
        let digest = old.withUnsafeBytes {
            XXHash64.hash(UnsafeRawBufferPointer(rebasing: $0[32...]), after: UnsafeRawBufferPointer(rebasing: $0[0..<24]))
        }
        old.replaceSubrange(24..<32, with: withUnsafeBytes(of: digest.littleEndian, Array.init))
        return old
    }

    /// A loose file as version 1 wrote it: the same fields, bytes 24..<28 zero and a
    /// CRC-32 of bytes 0..<28 and the payload in 28..<32.
    private func rewrittenAsVersionOne(_ image: [UInt8]) -> [UInt8] {
        var old = image
        old[4] = 1
        old.replaceSubrange(24..<28, with: [0, 0, 0, 0])
        let crc = old.withUnsafeBytes {
            CRC32.update(CRC32.checksum(UnsafeRawBufferPointer(rebasing: $0[0..<28])), UnsafeRawBufferPointer(rebasing: $0[32...]))
        }
        old.replaceSubrange(28..<32, with: withUnsafeBytes(of: crc.littleEndian, Array.init))
        return old
    }

    @Test("every single-byte corruption and every truncation of a pack record is detected")
    func packCorruptionExhaustive() throws {
        let value = Samples.compressible(60)
        let id = BlobID(hashing: value)
        let blob = value.withUnsafeBytes { PreparedBlob.encoding($0, id: id, codec: .zlib, packThreshold: 1 << 16, cipher: nil) }
        #expect(blob.packed)
        let info = BlobInfo(id: id, codec: blob.codec, rawLength: value.count, payloadLength: blob.payloadLength,
                            place: .packed(segment: 1, offset: 16))
        let image = blob.withImage(Array.init)
        #expect(image.withUnsafeBytes { PackFormat.decode(record: $0, expecting: info, cipher: nil) } == .success(value))
        for position in image.indices {
            for replacement in UInt8.min...UInt8.max where replacement != image[position] {
                var damaged = image
                damaged[position] = replacement
                guard case .failure = damaged.withUnsafeBytes({ PackFormat.decode(record: $0, expecting: info, cipher: nil) }) else {
                    Issue.record("byte \(position) = \(replacement) not detected")
                    return
                }
            }
        }
        for length in 0..<image.count {
            guard case .failure = Array(image.prefix(length)).withUnsafeBytes({ PackFormat.decode(record: $0, expecting: info, cipher: nil) }) else {
                Issue.record("truncation to \(length) not detected")
                return
            }
        }
    }

    @Test("a damaged blob read through the cache throws corruptBlob, then reads as a miss", arguments: [0, 1 << 16])
    func corruptReadThroughCache(packThreshold: Int) throws {
        let dir = TemporaryDirectory()
        let cache = try BlobCache(directory: dir.path, configuration: .testing { $0.packThreshold = packThreshold })
        let value = Samples.random(2000)
        let id = try cache.set(value, forKey: "k")
        try cache.set(Samples.random(2000, seed: 9), forKey: "other")
        let file = packThreshold == 0 ? looseFile(dir.path, id) : dir.appending("packs/000001.pack")
        flipByte(file, at: packThreshold == 0 ? 100 : 16 + 100, mask: 0x01)
        #expect(throws: BlobCacheError.self) { _ = try cache.bytes(forKey: "k") }
        #expect(same(try cache.bytes(forKey: "k"), nil))
        #expect(same(try cache.bytes(forKey: "other"), Samples.random(2000, seed: 9)))
    }

    @Test("large values (hashed and compressed on two cores) round-trip, and damage to them is caught",
          arguments: [Codec.lz4, .zlib])
    func largeValues(codec: Codec) throws {
        let dir = TemporaryDirectory()
        let cache = try BlobCache(directory: dir.path, configuration: .testing { $0.codec = codec })
        let value = Samples.compressible(3 << 20)
        let id = try cache.set(value, forKey: "big")
        #expect(id == BlobID(hashing: value))
        #expect(same(try cache.bytes(forKey: "big"), value))
        let file = looseFile(dir.path, id)
        flipByte(file, at: readFile(file).count / 2, mask: 0x10)
        #expect(throws: BlobCacheError.self) { _ = try cache.bytes(forKey: "big") }
    }

    @Test("a crashed writer's temporary file and a torn pack tail are never read as blobs")
    func crashLeftovers() throws {
        let dir = TemporaryDirectory()
        let value = Samples.random(300)
        let id = BlobID(hashing: value)
        do {
            let cache = try BlobCache(directory: dir.path, configuration: .testing())
            try cache.set(Samples.random(100, seed: 5), forKey: "kept")
            try cache.close()
        }
        // A loose writer killed before its rename: a complete image under a temporary name.
        let loose = value.withUnsafeBytes { PreparedBlob.encoding($0, id: id, codec: .lz4, packThreshold: 0, cipher: nil) }
        let shard = (looseFile(dir.path, id) as NSString).deletingLastPathComponent
        try FileManager.default.createDirectory(atPath: shard, withIntermediateDirectories: true)
        writeFile(shard + "/tmp.4242.1", loose.withImage(Array.init))
        // A pack writer killed mid-append: half a record at the end of the segment.
        let packed = value.withUnsafeBytes { PreparedBlob.encoding($0, id: id, codec: .lz4, packThreshold: 1 << 16, cipher: nil) }
        let segment = dir.appending("packs/000001.pack")
        writeFile(segment, readFile(segment) + packed.withImage(Array.init).prefix(packed.imageCount / 2))

        let cache = try BlobCache(directory: dir.path, configuration: .testing())
        #expect(try cache.bytes(for: id) == nil)
        #expect(try cache.totals().entries == 1)
        // The torn tail was cut, so the next append lands on a record boundary and reads back.
        try cache.set(value, forKey: "new")
        try cache.set(Samples.random(50, seed: 6), forKey: "after")
        #expect(try cache.bytes(forKey: "new") == value)
        #expect(try cache.bytes(forKey: "after") == Samples.random(50, seed: 6))
        #expect(try cache.bytes(forKey: "kept") == Samples.random(100, seed: 5))
    }

    @Test("a missing directory, a file in its place, or an unwritable one is a typed error naming the path")
    func unusableDirectory() throws {
        let dir = TemporaryDirectory()
        let missing = dir.appending("absent/cache")
        #expect(throws: BlobCacheError.directoryUnusable(path: missing, reason: "it does not exist")) {
            try BlobCache(directory: missing, configuration: .testing(), createDirectory: false)
        }
        let file = dir.appending("file")
        writeFile(file, [1, 2, 3])
        #expect(throws: BlobCacheError.directoryUnusable(path: file, reason: "it is not a directory")) {
            try BlobCache(directory: file, configuration: .testing())
        }
        #expect(readFile(file) == [1, 2, 3])
        let created = try BlobCache(directory: missing, configuration: .testing())
        try created.set([1], forKey: "k")
        #expect(try created.bytes(forKey: "k") == [1])
    }

    /// (path, inode, size, mtime) of every file under objects/ and packs/.
    private func blobFileStats(_ root: String) throws -> [String] {
        try (filesBelow(root + "/objects").map { "objects/" + $0 } + filesBelow(root + "/packs").map { "packs/" + $0 }).map { name in
            let attributes = try FileManager.default.attributesOfItem(atPath: root + "/" + name)
            return "\(name) \(attributes[.systemFileNumber] ?? 0) \(attributes[.size] ?? 0) \(attributes[.modificationDate] ?? 0)"
        }
    }
}

@Suite("Pack segment numbers")
struct SegmentNumberTests {
    @Test("once segment numbers reach 2^24, new segments take the lowest free number and survive a reopen")
    func numbersWrapAround() throws {
        let dir = TemporaryDirectory()
        let configure: (inout BlobCache.Configuration) -> Void = { $0.packSegmentLimit = 64 << 10 }
        try BlobCache(directory: dir.path, configuration: .testing(configure)).close()
        // The highest number a segment may have, as a long-lived cache would reach it.
        let last = PackFormat.maxSegmentNumber
        writeFile(dir.appending("packs/" + PackFormat.fileName(of: last)), PackFormat.segmentHeader(number: last))
        let cache = try BlobCache(directory: dir.path, configuration: .testing(configure))
        var values: [String: [UInt8]] = [:]
        for n in 0..<80 {   // 80 × 2 KB: more than the highest segment holds, so new ones start
            values["k\(n)"] = Samples.random(2000, seed: UInt64(n))
            try cache.set(values["k\(n)"]!, forKey: "k\(n)")
        }
        try cache.close()
        let names = try FileManager.default.contentsOfDirectory(atPath: dir.appending("packs"))
        #expect(names.allSatisfy { PackFormat.segmentNumber(fromFileName: $0) != nil }, "\(names.sorted())")
        let reopened = try BlobCache(directory: dir.path, configuration: .testing(configure))
        for (key, value) in values { #expect(same(try reopened.bytes(forKey: key), value), "\(key)") }
    }
}
