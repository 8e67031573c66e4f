import SystemPackage
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

extension CacheState {
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
