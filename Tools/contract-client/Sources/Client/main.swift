// The library's public API used as a client outside the repository would: every name it
// fixes, with the types it gives. Tools/check-contract.sh copies this package out of the
// repository and builds and runs it against a clone of it.
import BlobCache
import Foundation
import Logging

struct Profile: Codable, Equatable, Sendable { var name: String }

var configuration = BlobCache.Configuration()
configuration.memoryLimit = 8 << 20
configuration.logger = Logger(label: "client")
// Compression presets (large values stored raw under .fastReads).
configuration.compression = .fastReads
precondition(configuration.codec == .lz4 && configuration.compression.codec(forValueOf: 1 << 20) == Codec.none)
let directory = NSTemporaryDirectory() + "client-\(getpid())"
let cache = try BlobCache(directory: directory, configuration: configuration)

// Single-flight read-through.
let loaded: [UInt8] = try await cache.value(forKey: "k", expiry: nil, loadingWith: { [1, 2, 3] })
let again = try await cache.value(forKey: "k") { [9] }
precondition(loaded == [1, 2, 3] && again == loaded)

// Observers.
let stream: AsyncStream<BlobCache.Change> = cache.changes(forKeysWithPrefix: "a/")
let all = cache.changes()
_ = all
let consumer = Task { () -> [BlobCache.Change] in
    var seen: [BlobCache.Change] = []
    for await change in stream {
        seen.append(change)
        switch change {
        case .set(let key, let id): print("set", key, id)
        case .removed(let key, let reason):
            switch reason {
            case .explicit, .expired, .evicted, .damaged, .cleared: print("removed", key, reason)
            }
        }
        if seen.count == 2 { break }
    }
    return seen
}
try cache.set([7], forKey: "a/1")
try cache.removeValue(forKey: "a/1")
let seen = await consumer.value
precondition(seen == [.set(key: "a/1", id: BlobID(hashing: [7])), .removed(key: "a/1", reason: .explicit)])

// Memory tier.
cache.purgeMemory()

// Namespaces.
let ns: BlobCache.Namespace = cache.namespace("thumbs")
try ns.set([5], forKey: "x")
let x: [UInt8]? = try ns.bytes(forKey: "x")
precondition(x == [5])
let hasX = try ns.contains("x")
let nsKeys = try ns.keys()
precondition(hasX && nsKeys == ["x"])
let nsTotals = try ns.totals()
print(nsTotals.entries, nsTotals.storedBytes)
ns.setLimits(maxStoredBytes: 1_000_000)
try ns.setLimits(maxStoredBytes: nil)
_ = try await ns.value(forKey: "y") { [6] }
_ = try await ns.async.bytes(forKey: "x")
let removedX = try ns.removeValue(forKey: "x")
precondition(removedX)
try ns.removeAll()

// Statistics.
let stats: BlobCache.Statistics = cache.statistics()
let counts: [Int] = [stats.hits, stats.misses, stats.memoryHits, stats.sets, stats.dedupedSets, stats.evictions,
                     stats.expirations, stats.bytesRead, stats.bytesWritten]
let ratio: Double = stats.hitRatio
print(counts, ratio, stats.lifetime.hits, stats.lifetime.hitRatio)

// Codable.
let json = CodableCache<Profile>(cache)
try json.set(Profile(name: "Ada"), forKey: "p", expiry: .after(.seconds(60)))
let ada = try json.value(forKey: "p")
precondition(ada == Profile(name: "Ada"))
let plist = CodableCache<Profile>(cache, encoder: PropertyListEncoder(), decoder: PropertyListDecoder())
try plist.set(Profile(name: "Bob"), forKey: "q")
let bob = try await plist.value(forKey: "q") { Profile(name: "never") }
precondition(bob == Profile(name: "Bob"))

// Values of any size: streamed sets and reads.
let large = [UInt8]((0..<3_000_000).map { UInt8(truncatingIfNeeded: $0 &* 2_654_435_761 >> 7) })
let upload: PendingSet = try cache.startSet(forKey: "big", expiry: nil, pinned: false)
try upload.append(Array(large[..<1_500_000]))
try large[1_500_000...].withUnsafeBytes { try upload.append($0) }
let bigID: BlobID = try upload.finish()
precondition(bigID == BlobID(hashing: large) && upload.count == large.count)
let reader: ValueReader? = try cache.openValue(forKey: "big")
var streamed: [UInt8] = []
while let chunk = try reader?.next() { streamed += chunk }
precondition(reader?.length == large.count && streamed == large)
var chunked = 0
let found: Bool = try cache.forEachChunk(forKey: "big") { chunked += $0.count }
precondition(found && chunked == large.count)
let sourcePath = directory + ".source"
FileManager.default.createFile(atPath: sourcePath, contents: Data(large))
let source = try FileDescriptor.open(sourcePath, .readOnly)
_ = try cache.set(contentsOf: source, forKey: "from-fd", expiry: nil, pinned: false)
try source.close()
let sink = try FileDescriptor.open(sourcePath + ".out", .writeOnly, options: [.create, .truncate], permissions: .ownerReadWrite)
let wrote: Bool = try cache.write(forKey: "from-fd", to: sink)
try sink.close()
precondition(wrote && FileManager.default.contents(atPath: sourcePath + ".out") == Data(large))
let asyncUpload: AsyncPendingSet = try await cache.async.startSet(forKey: "async-big")
try await asyncUpload.append(large)
_ = try await asyncUpload.finish()
let fromSequence = AsyncStream<[UInt8]> { continuation in
    continuation.yield(Array(large[..<1_000_000]))
    continuation.yield(Array(large[1_000_000...]))
    continuation.finish()
}
_ = try await cache.async.set(chunks: fromSequence, forKey: "async-seq")
if let chunks: ValueChunks = try await cache.async.chunks(forKey: "async-seq") {
    var total = 0
    for try await chunk in chunks { total += chunk.count }
    precondition(total == chunks.length && total == large.count)
}
let devNull = try FileDescriptor.open("/dev/null", .writeOnly)
let wroteAsync: Bool = try await cache.async.write(forKey: "async-seq", to: devNull)
try devNull.close()
precondition(wroteAsync)
let nsUpload = try ns.startSet(forKey: "streamed")
try nsUpload.append([1, 2, 3])
try nsUpload.finish()
let streamedBack = try ns.openValue(forKey: "streamed")?.next()
precondition(streamedBack == [1, 2, 3])
try? FileManager.default.removeItem(atPath: sourcePath)
try? FileManager.default.removeItem(atPath: sourcePath + ".out")

try cache.close()
try? FileManager.default.removeItem(atPath: directory)
print("client: ok")
