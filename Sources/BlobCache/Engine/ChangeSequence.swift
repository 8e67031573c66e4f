import Synchronization
import SystemPackage

/// The change sequence in `DIR/sequence`, mapped shared by every open cache of the directory:
/// a writer makes it odd before it changes any file and even (2 more than before) once its
/// records are written, all under the flock. An open whose index was last brought up to date
/// at the value the sequence still holds is current without reading anything (one atomic
/// load: how a `get` in a process alone stays free of system calls); an odd value under the
/// flock means a writer died mid-operation (docs/FORMAT.md, "sequence").
///
///     if sequence.value == engine.appliedSequence { /* the index is current */ }
final class ChangeSequence: @unchecked Sendable {
    /// The file's size: magic, version, the sequence, reserved.
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

    /// Maps `DIR/sequence`, writing its header first when it is missing, short or not one
    /// (in place: other processes may have it mapped). Call with the flock held. `nil` when it
    /// cannot be mapped (say, a link planted in its place): every operation then catches up
    /// under the flock.
    static func open(_ path: FilePath, io: FileIO) -> ChangeSequence? {
        guard let fd = try? io.open(path, .readWrite, options: [.create, .noFollow], permissions: io.filePermissions) else { return nil }
        defer { io.close(fd) }
        guard let size = try? io.regularFileSize(of: fd, path: path) else { return nil }
        if size != Int64(fileSize) || (try? io.read(fd, count: magic.count, at: 0, path: path)) != magic {
            var image = magic + [UInt8](repeating: 0, count: fileSize - magic.count)
            image[8] = 2   // even: no writer inside
            do {
                try io.truncate(fd, to: Int64(fileSize), path: path)
                try image.withUnsafeBytes { try io.writeAll(fd, $0, at: 0, path: path) }
            } catch { return nil }
        }
        guard let base = try? io.system.mapWritable(fd, length: fileSize) else { return nil }
        return ChangeSequence(base: base, io: io)
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
    /// reads the journal (`CacheEngine.catchUpWithoutLock`).
    func store(_ value: UInt64) {
        counter.pointee.store(value, ordering: .releasing)
        atomicMemoryFence(ordering: .sequentiallyConsistent)
    }
}
