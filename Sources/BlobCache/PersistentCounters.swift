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
    static func saved(in directory: FilePath) -> Self {
        guard let bytes = try? FileIO.readWholeFile(directory.appending("stats")),
              let counters = try? JSONDecoder().decode(Self.self, from: Data(bytes)) else { return Self() }
        return counters
    }

    /// Saves lifetime counts in `DIR/stats` (atomically).
    func save(in directory: FilePath) throws {
        let path = directory.appending("stats"), temporary = directory.appending("stats.tmp")
        let bytes = Array(try JSONEncoder().encode(self))
        let fd = try FileIO.open(temporary, .writeOnly, options: [.create, .truncate],
                                 permissions: [.ownerReadWrite, .groupRead, .otherRead])
        defer { try? fd.close() }
        try bytes.withUnsafeBytes { try FileIO.writeAll(fd, $0, at: 0, path: temporary) }
        try FileIO.rename(temporary, to: path)
    }
}
