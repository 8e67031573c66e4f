#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

extension Engine {
    /// Fixes everything a check reports. Opening the cache the normal way cuts a torn tail,
    /// rewrites a damaged journal from the records it can trust, rebuilds after a lost header
    /// and trims to the limits; then entries whose blob fails verification are removed
    /// (journaled, reason `damaged`), recorded sizes are corrected from the blob headers (files
    /// that are not the cache's are left alone), segments with a damaged header have their intact live
    /// records copied out before they go, and a full compaction drops dangling blobs,
    /// temporary files and empty shard directories. All of it runs through the engine's
    /// commit path, so a crash during a repair loses nothing a finished repair would keep.
    static func repair(_ files: CacheFiles, io: FileIO, findings: [BlobCache.Finding], limits: BlobCache.Limits,
                       lock: DirectoryLock, encryption: BlobCache.Encryption?) throws {
        var configuration = BlobCache.Configuration()
        configuration.encryption = encryption
        configuration.maxStoredBytes = limits.maxStoredBytes
        configuration.maxEntries = limits.maxEntries
        // The snapshot only speeds up opening: repair replays the whole journal, the authority.
        _ = try io.remove(files.snapshot)
        let (sharing, _) = try DirectorySharing.open(files: files, io: io, configuration: configuration, limits: limits,
                                                      lock: lock, alone: lock.isAlone)
        let damagedSegments = findings.filter { $0.problem == "pack-corrupt" }
            .compactMap { CachePath($0.path).lastComponent.flatMap(PackFormat.segmentNumber(fromFileName:)) }
        // Under the caller's flock (held again here), with the sequence odd while it changes
        // files: a repair that fails midway leaves every other open to check the files at its
        // next write; one that ends moves it on, and other opens catch up.
        try sharing.underFlock { writer in
            try writer.commit {
                try writer.state.dropEntriesWithDamagedBlobs()
                try writer.state.evacuate(segments: damagedSegments)
                _ = try writer.state.compact(recompressingTo: nil)
                try writer.state.persistRecency()
            }
            try writer.state.journal.sync()
        }
    }
}
