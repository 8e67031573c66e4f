import Foundation
import Testing
@testable import BlobCache

@Suite("Crash safety (SIGKILL)", .serialized)
struct CrashTests {
    /// Starts the writer, lets it acknowledge a random number of sets, kills it with SIGKILL
    /// mid-stream, and returns the acknowledged keys with the ids of their values.
    private func killWriter(_ dir: String, mode: String, start: Int, acknowledgements: Int) throws -> [String: BlobID] {
        let child = try ChildProcess(arguments: [dir, mode, String(start)])
        var acknowledged: [String: BlobID] = [:]
        while acknowledged.count < acknowledgements, let line = child.readLine() {
            let parts = line.split(separator: " ")
            guard parts.count == 3, parts[0] == "ok", let id = BlobID(hex: parts[2]) else {
                Issue.record("writer said: \(line)")
                break
            }
            acknowledged[String(parts[1])] = id
        }
        child.kill()
        child.wait()
        return acknowledged
    }

    /// Each check closes with a fresh index snapshot, so every killed writer started from one:
    /// the next open restores it and replays the journal the writer added before it died.
    @Test("after 50 SIGKILLs mid-set, every acknowledged set reads back with the right bytes")
    func killedWhileSetting() throws {
        let dir = TemporaryDirectory()
        var generator = SeededGenerator(seed: 50)
        var acknowledged: [String: BlobID] = [:]
        var configuration = BlobCache.Configuration()
        configuration.snapshotThreshold = 0
        for round in 0..<50 {
            let acks = try killWriter(dir.path, mode: "plain", start: round * 1000,
                                      acknowledgements: Int(generator.next() % 40) + 1)
            acknowledged.merge(acks) { $1 }
            let cache = try BlobCache(directory: dir.path, configuration: configuration)
            if round > 0 { #expect(cache.openReport.restoredFromSnapshot, "round \(round)") }
            for (key, id) in acknowledged {
                let bytes = try cache.bytes(forKey: key)
                #expect(bytes.map { BlobID(hashing: $0) } == id, "round \(round): \(key)")
            }
            try cache.close()
        }
        #expect(acknowledged.count >= 50)
    }

    @Test("pack garbage collection and eviction killed mid-way leave every live entry readable")
    func killedWhileCollecting() throws {
        let dir = TemporaryDirectory()
        var generator = SeededGenerator(seed: 51)
        for round in 0..<20 {
            let acks = try killWriter(dir.path, mode: "churn", start: round * 1000,
                                      acknowledgements: Int(generator.next() % 400) + 50)
            let cache = try BlobCache(directory: dir.path)
            for entry in try cache.entries() {
                let bytes = try cache.bytes(forKey: entry.key)
                #expect(bytes.map { BlobID(hashing: $0) } == entry.blobID, "round \(round): \(entry.key)")
                if let id = acks[entry.key] { #expect(entry.blobID == id) }
            }
            #expect(try cache.totals().storedBytes <= 1 << 20)
            try cache.close()
        }
        // The churn writer wrote megabytes in 64 KiB segments under a 1 MiB cap: without
        // collection there would be hundreds of segments.
        #expect(filesBelow(dir.appending("packs")).count < 40)
    }
}
