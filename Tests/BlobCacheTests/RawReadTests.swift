import Foundation
import SystemPackage
import Testing
@testable import BlobCache

/// Large values stored raw (incompressible ones, or any under `codec = .none`) are read
/// straight into the value in pieces, on every core, hashed as they arrive
/// (`RawPayloadReader`): every size reads back exactly, and every damage is still caught.
@Suite("Raw large reads")
struct RawReadTests {
    @Test("values stored raw read back exactly at every size around the pieces",
          arguments: [256 << 10, (256 << 10) + 1, 1 << 20, (1 << 20) + 31, (3 << 20) + 5, (8 << 20) + 123, 20 << 20])
    func sizes(count: Int) throws {
        let dir = TemporaryDirectory()
        let cache = try BlobCache(directory: dir.path, configuration: .testing())
        let value = Samples.random(count, seed: UInt64(count))   // random: LZ4 cannot shrink it, so it is stored raw
        let id = try cache.set(value, forKey: "big")
        #expect(readFile(looseFile(dir.path, id))[5] == CodecTag.none.rawValue,
                "stored raw (the header's codec byte, docs/FORMAT.md)")
        #expect(same(try cache.bytes(forKey: "big"), value))
    }

    @Test("a flipped byte anywhere in a raw payload is damage: an error, then a miss",
          arguments: [0, 5, LooseBlobFormat.headerSize, 200_000, 700_000, (1 << 20) + 31 + LooseBlobFormat.headerSize - 1])
    func damage(offset: Int) throws {
        let dir = TemporaryDirectory()
        let cache = try BlobCache(directory: dir.path, configuration: .testing())
        let value = Samples.random((1 << 20) + 31)
        let id = try cache.set(value, forKey: "big")
        try cache.set(Samples.random(1000, seed: 3), forKey: "small")
        flipByte(looseFile(dir.path, id), at: offset, mask: 0x04)
        #expect(throws: BlobCacheError.self) { _ = try cache.bytes(forKey: "big") }
        #expect(same(try cache.bytes(forKey: "big"), nil))
        #expect(same(try cache.bytes(forKey: "small"), Samples.random(1000, seed: 3)))
    }

    @Test("a raw payload cut short or grown is damage, not a crash", arguments: [-1, -300_000, 1])
    func wrongLength(change: Int) throws {
        let dir = TemporaryDirectory()
        let cache = try BlobCache(directory: dir.path, configuration: .testing())
        let value = Samples.random(1 << 20)
        let id = try cache.set(value, forKey: "big")
        let file = looseFile(dir.path, id)
        let image = readFile(file)
        writeFile(file, change < 0 ? Array(image.dropLast(-change)) : image + [UInt8](repeating: 7, count: change))
        #expect(throws: BlobCacheError.self) { _ = try cache.bytes(forKey: "big") }
        #expect(same(try cache.bytes(forKey: "big"), nil))
    }

    @Test("a read that fails partway through a raw payload is an I/O error; the value reads after", arguments: [1, 2, 4, 7])
    func failedRead(occurrence: Int) throws {
        let dir = TemporaryDirectory()
        let fileSystem = FaultyFileSystem()
        let cache = try openCache(dir, fileSystem)
        let value = Samples.random(1 << 20)
        let id = try cache.set(value, forKey: "big")
        fileSystem.arm(.init(call: .read, occurrence: occurrence, fault: .fail(.ioError), pathSuffix: String(id.hex.dropFirst(4))))
        #expect { _ = try cache.bytes(forKey: "big") } throws: { error in
            guard case BlobCacheError.io(let operation, _, .ioError) = error else { return false }
            return operation == "read"
        }
        #expect(fileSystem.fired)
        fileSystem.arm(nil)
        #expect(same(try cache.bytes(forKey: "big"), value), "an I/O error is not damage: nothing was dropped")
    }
}
