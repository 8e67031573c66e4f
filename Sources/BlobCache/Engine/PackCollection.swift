import SystemPackage

/// One automatic pack collection, taken apart so that its slow part runs outside the cache's
/// lock (docs/RELIABILITY.md, "Maintenance outside the lock"):
///
/// 1. under the lock, `CacheEngine.planPackCollection` picks the victim segments and the live
///    records to move, and reserves a number for a new segment;
/// 2. outside it, `copy()` writes those records into the new segment, fsyncs it and names it;
/// 3. under the lock, `CacheEngine.adopt` takes the segment in and journals the new place of
///    every record still live where it was copied from;
/// 4. outside it, the journal is fsynced (`journal`);
/// 5. under the lock, `CacheEngine.finish` deletes the victims.
///
/// Readers and writers run between the steps; each step under the lock checks again what the
/// others changed. Nothing is deleted before the copies and the records naming them are durable.
struct PackCollection: Sendable {
    /// A live record to copy, as the index knew it when the collection was planned.
    struct Move: Sendable {
        let info: BlobInfo
        let source: PackSegment
        let offset: UInt64
        /// The bytes written to `source` when the collection was planned: a record the index
        /// places past them is cut short and not read (its length may be damaged).
        let sourceEnd: Int64
    }

    let victims: [UInt32]
    let moves: [Move]
    /// The reserved number of the segment the records are copied into; `nil` when no record
    /// is live in the victims (nothing is copied, no segment made).
    let number: UInt32?
    /// The bytes a segment is mapped over (the segment size limit).
    let mappedLength: Int
    let files: CacheFiles
    let io: FileIO

    /// What `copy()` wrote.
    struct Copy: Sendable {
        let segment: PackSegment
        let end: Int64
        /// Each moved record with its offset in the new segment.
        let placed: [(info: BlobInfo, offset: UInt64)]
        /// Records that were cut short in their segment (a power cut in `.processCrashSafe`):
        /// not copied; their entries are dropped as a read would drop them.
        let cutShort: [BlobInfo]
    }

    /// Writes the live records into a new segment staged beside `packs/`, fsyncs it, renames it
    /// to its reserved name and fsyncs `packs/`. Nothing refers to the segment yet, so a crash
    /// anywhere here leaves only dead bytes (and open trims them from a newest segment).
    func copy() throws -> Copy? {
        guard let number else { return nil }
        let path = files.segmentPath(number)
        let staging = files.stagingPath(beside: path)
        let fd = try io.open(staging, .readWrite, options: [.create, .exclusiveCreate, .noFollow],
                             permissions: io.filePermissions)
        var end = Int64(PackFormat.segmentHeaderSize)
        var placed: [(info: BlobInfo, offset: UInt64)] = []
        var cutShort: [BlobInfo] = []
        do {
            try PackFormat.segmentHeader(number: number).withUnsafeBytes { try io.writeAll(fd, $0, at: 0, path: staging) }
            for move in moves {
                guard Int64(move.offset) + Int64(move.info.footprint) <= move.sourceEnd else {
                    cutShort.append(move.info)
                    continue
                }
                let image = try io.read(move.source.descriptor, count: move.info.footprint, at: Int64(move.offset),
                                        path: move.source.path)
                guard image.count == move.info.footprint else {
                    cutShort.append(move.info)
                    continue
                }
                try image.withUnsafeBytes { try io.writeAll(fd, $0, at: end, path: staging) }
                placed.append((move.info, UInt64(end)))
                end += Int64(image.count)
            }
            try io.sync(fd, path: staging)
            try io.rename(staging, to: path)
        } catch {
            io.close(fd)
            _ = try? io.remove(staging)
            throw error
        }
        let segment = PackSegment(number: number, path: path, descriptor: fd, mappedLength: mappedLength, io: io)
        do { try io.syncDirectory(files.packs) } catch {
            _ = try? io.remove(path)
            throw error
        }
        return Copy(segment: segment, end: end, placed: placed, cutShort: cutShort)
    }
}
