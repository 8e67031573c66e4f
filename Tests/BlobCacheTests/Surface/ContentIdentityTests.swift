import Foundation
import Testing
import Crypto
@testable import BlobCache

/// The public MD5 collision pair (Wang and Yu, 2004): two 128-byte messages, one MD5
/// (79054025255fb1a26e4bc422aef54eb4). MD5 works on 64-byte blocks, so the same bytes appended
/// to both keep the collision: `extended(by:)` makes colliding values of any size.
enum CollisionPair {
    /// Read from Tests/Fixtures, where every test target finds them.
    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Fixtures")
    static let a = [UInt8]((try? Data(contentsOf: fixtures.appendingPathComponent("md5-collision-a.bin"))) ?? Data())
    static let b = [UInt8]((try? Data(contentsOf: fixtures.appendingPathComponent("md5-collision-b.bin"))) ?? Data())
    static let id = "79054025255fb1a26e4bc422aef54eb4"

    /// Both messages with `suffix` appended: still one MD5, still different bytes.
    static func extended(by suffix: [UInt8]) -> (a: [UInt8], b: [UInt8]) { (a + suffix, b + suffix) }
}

@Suite("content identity: a name is never proof of equality")
struct ContentIdentityTests {
    @Test("the pair is a real collision: one MD5, other bytes")
    func pairCollides() {
        #expect(CollisionPair.a != CollisionPair.b)
        #expect(BlobID(hashing: CollisionPair.a).hex == CollisionPair.id)
        #expect(BlobID(hashing: CollisionPair.b).hex == CollisionPair.id)
        let (a, b) = CollisionPair.extended(by: Samples.random(1000))
        #expect(BlobID(hashing: a) == BlobID(hashing: b) && a != b)
    }

    /// Values of a packed size, a loose size, and a size hashed and compressed on every core.
    static let sizes = [0, 20_000, 400_000]

    @Test("a value whose MD5 names a stored value with other bytes is refused, and nothing stored changes",
          arguments: sizes)
    func collisionRefused(suffixBytes: Int) throws {
        let dir = TemporaryDirectory()
        let (a, b) = CollisionPair.extended(by: Samples.compressible(suffixBytes))
        let cache = try BlobCache(directory: dir.path)
        try cache.set(Array("before".utf8), forKey: "key-b")
        let id = try cache.set(a, forKey: "key-a")
        #expect(throws: BlobCacheError.contentCollision(id: id)) { try cache.set(b, forKey: "key-b") }
        #expect(throws: BlobCacheError.contentCollision(id: id)) { try cache.set(b, forKey: "key-c") }
        #expect(throws: BlobCacheError.contentCollision(id: id)) { try cache.store(b) }
        #expect(try cache.bytes(forKey: "key-a") == a)
        #expect(try cache.bytes(forKey: "key-b") == Array("before".utf8))
        #expect(try cache.bytes(forKey: "key-c") == nil)
        #expect(try cache.bytes(for: id) == a)
        // The same bytes again still share the blob.
        #expect(try cache.set(a, forKey: "key-d") == id)
        #expect(try cache.bytes(forKey: "key-d") == a)
        let stats = cache.statistics()
        #expect(stats.contentCollisions == 3)
        #expect(stats.deduplicatedSets == 1)
        try cache.close()
        #expect(try BlobCache(directory: dir.path).statistics().lifetime.contentCollisions == 3)
        let report = try BlobCache.check(directory: dir.path)
        #expect(report.errors.isEmpty)
    }

    @Test("a set whose value is stored, but damaged, stores it again instead of sharing the damage")
    func damagedStoredCopy() throws {
        let dir = TemporaryDirectory()
        let value = Samples.random(100_000)
        let cache = try BlobCache(directory: dir.path)
        let id = try cache.set(value, forKey: "first")
        let file = dir.appending("objects/\(id.hex.prefix(1))/\(id.hex.dropFirst(1).prefix(1))/\(id.hex)")
        var image = try #require(FileManager.default.contents(atPath: file))
        image[image.count - 10] ^= 0x40
        try image.write(to: URL(fileURLWithPath: file))
        #expect(try cache.set(value, forKey: "second") == id)
        #expect(try cache.bytes(forKey: "second") == value)
        #expect(try cache.bytes(forKey: "first") == nil, "the damaged copy's entries were dropped")
        try cache.close()
        #expect(try BlobCache.check(directory: dir.path).errors.isEmpty)
    }

    @Test("keys are their exact UTF-8: two canonically equivalent spellings are two keys")
    func canonicallyEquivalentKeys() async throws {
        let precomposed = "caf\u{E9}", decomposed = "cafe\u{301}"
        #expect(precomposed == decomposed, "Swift's String equality says they are one")
        let dir = TemporaryDirectory()
        let cache = try BlobCache(directory: dir.path)
        try cache.set(Array("one".utf8), forKey: precomposed)
        try cache.set(Array("two".utf8), forKey: decomposed)
        #expect(try cache.bytes(forKey: precomposed) == Array("one".utf8))
        #expect(try cache.bytes(forKey: decomposed) == Array("two".utf8))
        #expect(try cache.entries().count == 2)
        #expect(try cache.removeValue(forKey: decomposed))
        #expect(try cache.bytes(forKey: precomposed) == Array("one".utf8))
        try cache.close()
    }

    @Test("single-flight loads of two equivalent spellings are two loads, each with its own value")
    func flightsByExactKey() {
        let flights = FlightTable()
        let first = flights.flight(for: "caf\u{E9}")
        let second = flights.flight(for: "cafe\u{301}")
        #expect(first.isNew && second.isNew)
        #expect(first.flight !== second.flight)
        #expect(flights.running("cafe\u{301}") === second.flight)
    }

    @Test("recency noted without the flock is kept per exact key: reads of two equivalent spellings leave two pending accesses")
    func pendingAccessesByExactKey() throws {
        let dir = TemporaryDirectory()
        let clock = ManualClock()
        let cache = try BlobCache(directory: dir.path, configuration: .testing(clock: clock))
        try cache.set([1], forKey: "caf\u{E9}")
        try cache.set([2], forKey: "cafe\u{301}")
        clock.advance(by: .seconds(120))   // past the access interval: each read's access is due
        #expect(try cache.bytes(forKey: "caf\u{E9}") == [1])
        #expect(try cache.bytes(forKey: "cafe\u{301}") == [2])
        #expect(cache.engine.inspect { $0?.pendingAccessCount } == 2)
        try cache.close()
    }
}

@Suite("remote key records: version 2, authenticated")
struct RemoteKeyRecordTests {
    static let key = SymmetricKey(size: .bits256)
    static let record = RemoteKeyRecord(key: "k/é", id: BlobID(hashing: [1, 2]), expiry: 42,
                                        sha256: Array(SHA256.hash(data: [1, 2])))

    @Test("a record reads back as written, tagged or not; a tag is required and checked only with a key")
    func roundTrip() {
        let plain = Self.record.encoded(authenticatingWith: nil)
        let tagged = Self.record.encoded(authenticatingWith: Self.key)
        #expect(plain.count == 72 + 4 && tagged.count == 104 + 4)
        #expect(RemoteKeyRecord.decode(plain, authenticatingWith: nil) == .success(Self.record))
        #expect(RemoteKeyRecord.decode(tagged, authenticatingWith: nil) == .success(Self.record))
        #expect(RemoteKeyRecord.decode(tagged, authenticatingWith: Self.key) == .success(Self.record))
        #expect(RemoteKeyRecord.decode(plain, authenticatingWith: Self.key) == .failure(.unauthenticated))
        #expect(RemoteKeyRecord.decode(tagged, authenticatingWith: SymmetricKey(size: .bits256)) == .failure(.unauthenticated))
    }

    @Test("every truncation and every flipped byte of a tagged record is refused, never a crash or another record")
    func everyDamageRefused() {
        let tagged = Self.record.encoded(authenticatingWith: Self.key)
        for length in 0..<tagged.count {
            #expect(throws: (any Error).self) { try RemoteKeyRecord.decode(Array(tagged.prefix(length)), authenticatingWith: Self.key).get() }
        }
        for index in tagged.indices {
            var damaged = tagged
            damaged[index] ^= 0x01
            #expect(throws: (any Error).self) { try RemoteKeyRecord.decode(damaged, authenticatingWith: Self.key).get() }
            // With the CRC recomputed, as a forger would: the tag still refuses it.
            guard index < tagged.count - 4 else { continue }
            damaged.removeLast(4)
            damaged += withUnsafeBytes(of: CRC32.checksum(damaged).littleEndian, Array.init)
            #expect(throws: (any Error).self) { try RemoteKeyRecord.decode(damaged, authenticatingWith: Self.key).get() }
        }
    }
}

/// An id names a value only while its blob is stored: once the last entry of a value goes,
/// its MD5 twin may be stored under the same id. Nothing may remember the first value by id.
@Suite("content identity: nothing remembers a value by id past its blob")
struct ReleasedIdentityTests {
    /// Colliding values large enough to be loose files (read with an `open`).
    static let (a, b) = CollisionPair.extended(by: Samples.random(100_000, seed: 5))

    @Test("another open's memory tier forgets a value whose blob was released there, before its twin is stored")
    func memoryTierAcrossOpens() throws {
        let dir = TemporaryDirectory()
        let writer = try BlobCache(directory: dir.path)
        let reader = try BlobCache(directory: dir.path, configuration: .testing { $0.memoryLimit = 1 << 20 })
        try writer.set(Self.a, forKey: "k1")
        #expect(try reader.bytes(forKey: "k1") == Self.a)   // now in the reader's memory tier
        #expect(try writer.removeValue(forKey: "k1"))
        try writer.set(Self.b, forKey: "k2")                   // the twin, a new blob under the same id
        #expect(try reader.bytes(forKey: "k2") == Self.b)
        #expect(throws: BlobCacheError.contentCollision(id: BlobID(hashing: Self.a))) { try reader.set(Self.a, forKey: "k3") }
        #expect(try writer.bytes(forKey: "k3") == nil)
        try reader.close()
        try writer.close()
    }

    @Test("a value read while its blob was released and its twin stored is not remembered under the id")
    func rememberAfterRelease() throws {
        let dir = TemporaryDirectory()
        let fileSystem = FaultyFileSystem()
        let cache = try BlobCache(directory: dir.path, configuration: .testing {
            $0.memoryLimit = 1 << 20
            $0.fileSystem = fileSystem
        })
        let id = try cache.set(Self.a, forKey: "k1")
        let fired = Locked(false)
        // Between the read's ticket and its return (outside the lock): k1 goes, the twin comes.
        // Weakly: the file system belongs to the cache's configuration (no cycle to leak).
        fileSystem.interposeOnOpen(before: nil, after: { [weak cache] path in
            guard let cache, path.string.hasSuffix(id.hex), !fired.withLock({ let was = $0; $0 = true; return was }) else { return }
            #expect((try? cache.removeValue(forKey: "k1")) == true)
            #expect((try? cache.set(Self.b, forKey: "k2")) == id)
        })
        // The bytes it opened were A's, but k1 is gone by the end of the read: A or a miss.
        let read = try cache.bytes(forKey: "k1")
        #expect(read == Self.a || read == nil)
        #expect(fired.withLock { $0 })
        #expect(try cache.bytes(forKey: "k2") == Self.b)
        try cache.close()
    }
}

extension ReleasedIdentityTests {
    @Test("a keyed read whose blob is released and whose twin takes the file before it opens it reads no twin's bytes")
    func twinTakesTheFileMidRead() throws {
        let dir = TemporaryDirectory()
        let fileSystem = FaultyFileSystem()
        let cache = try BlobCache(directory: dir.path, configuration: .testing { $0.fileSystem = fileSystem })
        let id = try cache.set(Self.a, forKey: "k1")
        let fired = Locked(false)
        fileSystem.interposeOnOpen(before: { [weak cache] path in
            guard let cache, path.string.hasSuffix(id.hex), !fired.withLock({ let was = $0; $0 = true; return was }) else { return }
            #expect((try? cache.removeValue(forKey: "k1")) == true)
            #expect((try? cache.set(Self.b, forKey: "k2")) == id)
        }, after: nil)
        let read = try cache.bytes(forKey: "k1")
        #expect(fired.withLock { $0 })
        #expect(read == nil, "k1 was removed before its file was opened, and never held the twin")
        #expect(try cache.bytes(forKey: "k2") == Self.b)
        try cache.close()
    }
}
