import Synchronization
import SystemPackage

/// The change sequence in `DIR/sequence`, mapped shared by every open cache of the directory:
/// a writer makes it odd before it changes any file and even (2 more than before) once its
/// records are written, all under the flock. An open whose index was last brought up to date
/// at the value the sequence still holds is current without reading anything (one atomic
/// load: how a `get` in a process alone stays free of system calls); an odd value under the
/// flock means a writer died mid-operation (docs/FORMAT.md, "The change sequence").
///
///     if sequence.value == engine.appliedSequence { /* the index is current */ }
final class ChangeSequence: @unchecked Sendable {
    /// The file's size: magic and version, the sequence, the committed end, reserved.
    static let fileSize = 32
    static let magic: [UInt8] = Array("BCSEQ\u{0}\u{0}\u{2}".utf8)   // 8 bytes, the last one the version

    private let base: UnsafeMutableRawPointer
    private let io: FileIO
    private let counter: UnsafeMutablePointer<Atomic<UInt64>>
    private let committed: UnsafeMutablePointer<Atomic<UInt64>>

    private init(base: UnsafeMutableRawPointer, io: FileIO) {
        self.base = base
        self.io = io
        counter = (base + 8).assumingMemoryBound(to: Atomic<UInt64>.self)
        committed = (base + 16).assumingMemoryBound(to: Atomic<UInt64>.self)
    }

    deinit { io.system.unmap(base, length: Self.fileSize) }

    /// Maps `DIR/sequence`. Call with the flock held. A missing, short or foreign file (an
    /// older version's, say) is written anew in place, its counter at 2, but only by an open
    /// that is `alone`: other opens may map it (a deleted one, even), and the counter must never
    /// go back for them, nor two files serve one directory. Throws `directoryUnusable` when it
    /// cannot be written or mapped (a link or a directory in its place, no shared maps).
    static func open(_ path: CachePath, root: CachePath, io: FileIO, alone: Bool) throws -> ChangeSequence {
        func refuse(_ reason: String) -> BlobCacheError {
            .directoryUnusable(path: root.string, reason: "\(path): \(reason)")
        }
        let fd: FileDescriptor
        do { fd = try io.open(path, .readWrite, options: [.create, .noFollow], permissions: io.filePermissions) } catch {
            throw refuse("cannot be opened (\(error)); a link or a directory in its place is never followed")
        }
        defer { io.close(fd) }
        guard let size = try? io.regularFileSize(of: fd, path: path) else { throw refuse("not a regular file") }
        if size != Int64(fileSize) || (try? io.read(fd, count: magic.count, at: 0, path: path)) != magic {
            guard alone else {
                throw refuse("missing, damaged or of another version while other opens have the directory: open it again once they are closed")
            }
            var image = magic + [UInt8](repeating: 0, count: fileSize - magic.count)
            image[8] = 2   // even: no writer inside
            do {
                try io.truncate(fd, to: Int64(fileSize), path: path)
                try image.withUnsafeBytes { try io.writeAll(fd, $0, at: 0, path: path) }
            } catch { throw refuse("cannot be written (\(error))") }
        }
        do { return ChangeSequence(base: try io.system.mapWritable(fd, length: fileSize), io: io) } catch {
            throw refuse("cannot be mapped (\(error)); the file system must support shared memory maps")
        }
    }

    /// The sequence now.
    var value: UInt64 { counter.pointee.load(ordering: .acquiring) }

    /// How many bytes of the journal now named `DIR/journal` hold records whose writes
    /// succeeded: a read without the flock replays no further (bytes past it may be a write
    /// in progress, or one that failed and is about to be cut).
    var committedEnd: UInt64 { committed.pointee.load(ordering: .acquiring) }

    /// Sets `committedEnd` (under the flock, before the sequence goes even).
    func publish(committedEnd end: Int64) { committed.pointee.store(UInt64(max(0, end)), ordering: .releasing) }

    /// Sets the sequence (under the flock). The fence keeps the file writes that follow an odd
    /// value from being seen before it by a reader that checks the value before and after it
    /// reads the journal (`DirectorySharing.catchUpWithoutLock`).
    func store(_ value: UInt64) {
        counter.pointee.store(value, ordering: .releasing)
        atomicMemoryFence(ordering: .sequentiallyConsistent)
    }
}
