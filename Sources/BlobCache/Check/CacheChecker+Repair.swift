import SystemPackage
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

extension CacheChecker {
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
        let (engine, _) = try CacheEngine.open(files: files, io: io, configuration: configuration, limits: limits,
                                               lock: lock, alone: lock.isAlone)
        engine.holdsLock = true   // the caller holds the flock for the whole repair
        // Odd while it changes files: a repair that fails midway leaves every other open to
        // check the files at its next write.
        if let sequence = engine.sequence { sequence.store(sequence.value | 1) }
        let damagedSegments = findings.filter { $0.problem == "pack-corrupt" }
            .compactMap { CachePath($0.path).lastComponent.flatMap(PackFormat.segmentNumber(fromFileName:)) }
        try engine.perform {
            try engine.dropEntriesWithDamagedBlobs()
            try engine.evacuate(segments: damagedSegments)
            _ = try engine.compact(recompressingTo: nil)
            try engine.persistRecency()
        }
        try engine.journal.sync()
        // Other opens catch up at their next operation.
        if let sequence = engine.sequence {
            sequence.publish(committedEnd: engine.journal.size)
            sequence.store((sequence.value | 1) + 1)
        }
    }
}

extension CacheEngine {
    /// Verifies every indexed blob in full (every check fsck makes); entries whose blob is damaged or missing are removed
    /// (reason `damaged`) and a loose blob whose file is intact but differs from the journal's
    /// record (codec, stored size) gets its record corrected.
    func dropEntriesWithDamagedBlobs() throws {
        var damaged = Set<BlobID>()
        for (id, blob) in index.storedBlobs {
            // A pieced blob (format 4) a piece at a time: a value of any size in bounded memory.
            if case .loose = blob.info.place,
               let pieced = PiecedBlobReader.verifyFile(at: files.loosePath(of: id), io: io, id: id, cipher: pipeline.cipher) {
                guard pieced.damage == nil, let header = pieced.header else {
                    damaged.insert(id)
                    continue
                }
                if header.codec != blob.info.codec || header.payloadLength != blob.info.payloadLength {
                    let corrected = BlobInfo(id: id, codec: header.codec, rawLength: header.rawLength,
                                             payloadLength: header.payloadLength, place: .loose)
                    index.relocate(corrected)
                    journal.append(.relocate(corrected))
                }
                continue
            }
            switch try pipeline.read(blob.info, at: try store.location(of: blob.info), checking: .everything) {
            case .failure:
                damaged.insert(id)
            case .success(let value):
                if pipeline.hasher.id(of: value) != id { damaged.insert(id); continue }
                guard case .loose = blob.info.place, let file = try io.readWholeFile(files.loosePath(of: id), atMost: LooseBlobFormat.largestFile(holding: blob.info)),
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
        // A corrupt loose file goes with its last entry, once the records are down.
        for slot in slots { remove(slot: slot, reason: .damaged) }
    }
}
