#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import SystemPackage

extension BlobCache.Counters {
    /// Adds two sets of counts.
    static func + (lhs: Self, rhs: Self) -> Self {
        var sum = lhs
        sum.hits += rhs.hits
        sum.misses += rhs.misses
        sum.sets += rhs.sets
        sum.deduplicatedSets += rhs.deduplicatedSets
        sum.evictions += rhs.evictions
        sum.expirations += rhs.expirations
        sum.corruptReads += rhs.corruptReads
        sum.journalCompactions += rhs.journalCompactions
        sum.packCollections += rhs.packCollections
        return sum
    }

    /// The lifetime counts saved in `DIR/stats` at each clean close (zero when absent or unreadable:
    /// they are statistics, never worth failing an open for).
    static func saved(in files: CacheFiles, io: FileIO) -> Self {
        guard let bytes = try? io.readWholeFile(files.stats),
              let counters = try? JSONDecoder().decode(Self.self, from: Data(bytes)) else { return Self() }
        return counters
    }

    /// Saves lifetime counts in `DIR/stats` (atomically).
    func save(in files: CacheFiles, io: FileIO) throws {
        let bytes = Array(try JSONEncoder().encode(self))
        _ = try bytes.withUnsafeBytes { try io.replaceAtomically(files.stats, with: $0, durable: false) }
    }
}
