import SystemPackage
#if canImport(Glibc)
import Glibc
#endif

extension CacheChecker {
    /// Fixes everything a check reports. Opening the cache the normal way cuts a torn tail,
    /// rewrites a damaged journal from the records it can trust, rebuilds after a lost header
    /// and trims to the limits; then entries whose blob fails verification are removed
    /// (journaled, reason repair), recorded sizes are corrected from the blob headers, files
    /// that do not belong are deleted, and a full compaction drops dangling blobs, temporary
    /// files and empty shard directories.
    static func repair(_ directory: FilePath, findings: [BlobCache.Finding], limits: BlobCache.Limits) throws {
        var configuration = BlobCache.Configuration()
        configuration.maxStoredBytes = limits.maxStoredBytes
        configuration.maxEntries = limits.maxEntries
        // The snapshot only speeds up opening: repair replays the whole journal, the authority.
        _ = try FileIO.remove(CacheEngine.snapshotPath(in: directory))
        let (engine, _) = try CacheEngine.open(directory: directory, configuration: configuration, limits: limits)
        for finding in findings where finding.problem == "unknown-file" || finding.problem == "pack-corrupt" {
            removeTree(FilePath(finding.path))
        }
        try engine.dropEntriesWithDamagedBlobs()
        _ = try engine.compact(recompressingTo: nil)
        try engine.persistRecency()
        try engine.journal.sync()
    }

    /// Deletes a file, or a directory with everything in it.
    static func removeTree(_ path: FilePath) {
        if FileIO.isDirectory(path) {
            for name in FileIO.listDirectory(path) { removeTree(path.appending(name)) }
            FileIO.removeDirectory(path)
        } else {
            _ = try? FileIO.remove(path)
        }
    }
}

extension CacheEngine {
    /// Verifies every indexed blob in full; entries whose blob is damaged or missing are removed
    /// (reason repair) and a loose blob whose file is intact but differs from the journal's
    /// record (codec, stored size) gets its record corrected.
    func dropEntriesWithDamagedBlobs() throws {
        var damaged = Set<BlobID>()
        for (id, blob) in index.storedBlobs {
            let location = store.location(of: blob.info)
            switch try BlobStore.read(blob.info, at: location) {
            case .failure:
                damaged.insert(id)
            case .success(let value):
                if BlobID(hashing: value) != id { damaged.insert(id); continue }
                guard case .loose = blob.info.place, let file = try FileIO.readWholeFile(store.loosePath(of: id)),
                      case .success(let header) = file.withUnsafeBytes({ LooseBlobFormat.parseHeader($0) }),
                      header.codec != blob.info.codec || header.payloadLength != blob.info.payloadLength else { continue }
                let corrected = BlobInfo(id: id, codec: header.codec, rawLength: header.rawLength,
                                         payloadLength: header.payloadLength, place: .loose)
                index.relocate(corrected)
                journal.append(.relocate(corrected))
            }
        }
        var slots: [Int32] = []
        for slot in index.liveSlots where damaged.contains(index.blob(ofEntry: slot).id) { slots.append(slot) }
        for slot in slots {
            let id = index.blob(ofEntry: slot).id
            let info = index.blob(id)?.info
            try remove(slot: slot, reason: .repair)
            // A corrupt loose file still on disk is deleted with its last entry (dispose did it).
            if let info, case .loose = info.place { _ = try? store.deleteLoose(id) }
        }
        try evictToLimits()
        try journal.flush()
    }
}
