import SystemPackage

/// One automatic pack collection, taken apart so that its slow part runs outside the cache's
/// lock (docs/RELIABILITY.md, "Maintenance outside the lock"):
///
/// 1. under the lock, `CacheState.planPackCollection` picks the victim segments and the live
///    records to move, and reserves a number for a new segment;
/// 2. outside it, `copy()` writes those records into a staged file and fsyncs it;
/// 3. under the lock, `CacheState.adopt` names the segment (under another number if another
///    process started a segment of that number meanwhile), fsyncs `packs/`, takes it in and
///    journals the new place of every record still live where it was copied from;
/// 4. outside it, the journal is fsynced (`journal`);
/// 5. under the lock, `CacheState.finish` deletes the victims.
///
/// "The lock" is the engine's and `DIR/lock`'s flock: other threads and other processes read
/// and write between the steps, and each step under the lock checks again what they changed.
/// Nothing is deleted before the copies and the records naming them are durable.
struct PackCollection: Sendable {
    /// A live record to copy, as the index knew it when the collection was planned.
    struct Move: Sendable {
        let info: BlobInfo
        let source: PackSegment
        let offset: UInt64
        /// The bytes written to `source` when the collection was planned: a record the index
        /// places past them is cut short and not read (its length may be damaged).
        let sourceEnd: Int64

        /// Whether the record lies within the bytes written to its source.
        var fits: Bool { Int64(offset) + Int64(info.footprint) <= sourceEnd }
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

    /// What `copy()` wrote: a staged, fsynced segment with the reserved number in its header.
    struct Copy: Sendable {
        let staging: CachePath
        let descriptor: FileDescriptor
        let number: UInt32
        let mappedLength: Int
        let end: Int64
        /// Each moved record with its offset in the new segment.
        let placed: [(info: BlobInfo, offset: UInt64)]
        /// Records that were cut short in their segment (a power cut in `.processCrashSafe`):
        /// not copied; their entries are dropped as a read would drop them.
        let cutShort: [BlobInfo]

        /// Closes and removes the staged file, when `CacheState.adopt` never took it.
        func discard(io: FileIO) {
            io.close(descriptor)
            _ = try? io.remove(staging)
        }
    }

    /// Writes the live records into a new segment staged beside `packs/` and fsyncs it. Its
    /// name is given under the lock (`CacheState.adopt`): a crash before leaves a staged file
    /// that the next open (or `compact`) sweeps once this process is gone.
    func copy() throws -> Copy? {
        guard let number else { return nil }
        let staging = files.stagingPath(beside: files.segmentPath(number))
        let fd = try io.open(staging, .readWrite, options: [.create, .exclusiveCreate, .noFollow],
                             permissions: io.filePermissions)
        var end = Int64(PackFormat.segmentHeaderSize)
        var placed: [(info: BlobInfo, offset: UInt64)] = []
        var cutShort: [BlobInfo] = []
        var output: [UInt8] = []
        output.reserveCapacity(Self.chunk + 64 << 10)
        func writeOutput() throws {
            try output.withUnsafeBytes { try io.writeAll(fd, $0, at: end, path: staging) }
            end += Int64(output.count)
            output.removeAll(keepingCapacity: true)
        }
        do {
            try PackFormat.segmentHeader(number: number).withUnsafeBytes { try io.writeAll(fd, $0, at: 0, path: staging) }
            var next = 0
            while next < moves.count {
                guard moves[next].fits else {
                    cutShort.append(moves[next].info)
                    next += 1
                    continue
                }
                // A run of records close together in one source, read with one pread.
                let run = next..<runEnd(from: next)
                let first = moves[run.lowerBound].offset
                let spanEnd = moves[run].map { $0.offset + UInt64($0.info.footprint) }.max() ?? first
                let span = try io.read(moves[next].source.descriptor, count: Int(spanEnd - first), at: Int64(first),
                                       path: moves[next].source.path)
                for move in moves[run] {
                    let start = Int(move.offset - first), count = move.info.footprint
                    guard start + count <= span.count else {   // the file ended early
                        cutShort.append(move.info)
                        continue
                    }
                    placed.append((move.info, UInt64(end) + UInt64(output.count)))
                    output += span[start..<start + count]
                }
                if output.count >= Self.chunk { try writeOutput() }
                next = run.upperBound
            }
            if !output.isEmpty { try writeOutput() }
            try io.sync(fd, path: staging)
        } catch {
            io.close(fd)
            _ = try? io.remove(staging)
            throw error
        }
        return Copy(staging: staging, descriptor: fd, number: number, mappedLength: mappedLength,
                    end: end, placed: placed, cutShort: cutShort)
    }

    /// About how many bytes `copy` reads or writes with one system call.
    static let chunk = 1 << 20

    /// The end of the run of moves from `start`: records of one source that fit in it, each
    /// at most 64 KiB after the one before, spanning at most `chunk` bytes (or one record).
    private func runEnd(from start: Int) -> Int {
        var end = start + 1
        var reach = moves[start].offset + UInt64(moves[start].info.footprint)
        while end < moves.count {
            let move = moves[end]
            let moveEnd = move.offset + UInt64(move.info.footprint)
            guard move.source === moves[start].source, move.fits, move.offset >= reach, move.offset - reach <= 64 << 10,
                  moveEnd - moves[start].offset <= UInt64(Self.chunk) else { break }
            reach = moveEnd
            end += 1
        }
        return end
    }
}
