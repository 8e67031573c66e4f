import SystemPackage

/// A descriptor closed when the last reference to it goes, so that work done outside the
/// cache's lock (an fsync after a pack collection) can keep a file open while the engine
/// moves on to another one (a journal rewrite). Like `PackSegment`, which does the same for
/// readers of a segment.
///
///     let file = OpenFile(descriptor: fd, path: path, io: io)
///     try file.sync()   // safe on any thread while `file` is held
final class OpenFile: Sendable {
    let descriptor: FileDescriptor
    let path: CachePath
    private let io: FileIO

    /// Takes `descriptor` over.
    init(descriptor: FileDescriptor, path: CachePath, io: FileIO) {
        self.descriptor = descriptor
        self.path = path
        self.io = io
    }

    deinit { io.close(descriptor) }

    /// fsyncs the file.
    func sync() throws { try io.sync(descriptor, path: path) }
}
