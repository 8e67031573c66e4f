#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import SystemPackage

extension BlobCache.Counters {
    /// Adds two sets of counts.
    static func + (lhs: Self, rhs: Self) -> Self {
        // Saturating: the saved counts come from a file, which may hold any number.
        var sum = lhs
        sum.hits.addSaturating(rhs.hits)
        sum.misses.addSaturating(rhs.misses)
        sum.memoryHits.addSaturating(rhs.memoryHits)
        sum.bytesRead.addSaturating(rhs.bytesRead)
        sum.bytesWritten.addSaturating(rhs.bytesWritten)
        sum.sets.addSaturating(rhs.sets)
        sum.deduplicatedSets.addSaturating(rhs.deduplicatedSets)
        sum.evictions.addSaturating(rhs.evictions)
        sum.expirations.addSaturating(rhs.expirations)
        sum.corruptReads.addSaturating(rhs.corruptReads)
        sum.journalCompactions.addSaturating(rhs.journalCompactions)
        sum.packCollections.addSaturating(rhs.packCollections)
        sum.contentCollisions.addSaturating(rhs.contentCollisions)
        sum.remoteRejections.addSaturating(rhs.remoteRejections)
        return sum
    }

    /// Counts a read that returned `bytes` bytes.
    mutating func countHit(bytes: Int, fromMemory: Bool) {
        hits += 1
        bytesRead += bytes
        if fromMemory { memoryHits += 1 }
    }

    /// The lifetime counts saved in `DIR/stats` at each clean close (zero when absent,
    /// unreadable, over 64 KiB or holding a negative count: they are statistics, never worth
    /// failing an open for).
    static func saved(in files: CacheFiles, io: FileIO) -> Self {
        guard let bytes = try? io.readWholeFile(files.stats, atMost: 64 << 10) else { return Self() }
        return parse(bytes) ?? Self()
    }

    /// Counts from the bytes of a `stats` file; `nil` unless they are its JSON with no negative count.
    static func parse(_ bytes: [UInt8]) -> Self? {
        guard let counters = try? JSONDecoder().decode(Self.self, from: Data(bytes)) else { return nil }
        let all = [counters.hits, counters.misses, counters.memoryHits, counters.bytesRead, counters.bytesWritten, counters.sets, counters.deduplicatedSets, counters.evictions,
                   counters.expirations, counters.corruptReads, counters.journalCompactions, counters.packCollections,
                   counters.contentCollisions, counters.remoteRejections]
        return all.allSatisfy { $0 >= 0 } ? counters : nil
    }

    /// Saves lifetime counts in `DIR/stats` (atomically).
    func save(in files: CacheFiles, io: FileIO) throws {
        let bytes = Array(try JSONEncoder().encode(self))
        _ = try bytes.withUnsafeBytes { try io.replaceAtomically(files.stats, with: $0, durable: false) }
    }
}
