import SystemPackage
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A whole file mapped privately into memory, unmapped when released. Reading shows the page
/// cache without copying it; a write copies the page it touches and never reaches the file
/// (MAP_PRIVATE). Mapping allocates nothing: a file that claims more bytes than it holds (a
/// sparse one) costs only the pages that are read, which is why files whose size nothing
/// vouches for (the journal, segments and blobs fsck and recovery scan) are mapped, not read.
final class MappedFile {
    let mutableBase: UnsafeMutableRawPointer
    let count: Int
    private let io: FileIO
    var bytes: UnsafeRawBufferPointer { UnsafeRawBufferPointer(start: mutableBase, count: count) }

    /// Maps the file at `path`; `nil` when it does not exist or is empty. By default its pages
    /// are prefaulted and may be written (copied); `forReadingOnly`, pages are read when used
    /// and `mutableBase` must not be written.
    convenience init?(_ path: CachePath, io: FileIO, forReadingOnly: Bool = false) throws {
        guard let fd = try io.openIfExists(path) else { return nil }
        defer { io.close(fd) }
        try self.init(fd, count: Int(try io.fileSize(fd, path: path)), path: path, io: io, forReadingOnly: forReadingOnly)
    }

    /// Maps the first `count` bytes of the open file `fd`; `nil` when `count` is 0. Writable
    /// pages are prefaulted unless `prefault` is false.
    init?(_ fd: FileDescriptor, count size: Int, path: CachePath, io: FileIO, forReadingOnly: Bool, prefault: Bool = true) throws {
        guard size > 0 else { return nil }
        let base = try io.map(fd, length: size, shared: false, populate: !forReadingOnly && prefault, path: path)
        // Prefaulted read-only, then made writable: populating a writable private mapping
        // would copy every page up front; this way only pages that are written get copied.
        guard forReadingOnly || mprotect(base, size, PROT_READ | PROT_WRITE) == 0 else {
            io.system.unmap(base, length: size)
            throw BlobCacheError.io(operation: "mprotect", path: path.string, errno: .last)
        }
        mutableBase = base
        count = size
        self.io = io
    }

    /// A private anonymous mapping holding a copy of `bytes`, laid out as a mapped file would
    /// be (page-aligned): for snapshot images that never were a file (fuzzing). `nil` when
    /// empty or when the memory cannot be had.
    init?(copying bytes: UnsafeRawBufferPointer, io: FileIO = .posix) {
        guard let source = bytes.baseAddress, bytes.count > 0,
              let base = mmap(nil, bytes.count, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0),
              base != MAP_FAILED else { return nil }
        base.copyMemory(from: source, byteCount: bytes.count)
        mutableBase = base
        count = bytes.count
        self.io = io
    }

    deinit { io.system.unmap(mutableBase, length: count) }

    /// Files up to this size are read whole by `withContents` (an I/O error is then a thrown
    /// error, not a SIGBUS, and file systems that cannot map work), unless its caller asks
    /// for a mapping from fewer bytes; larger ones are mapped.
    static let readLimit = 256 << 20

    /// Calls `body` with the bytes of `fd` from `offset` to `size`: read when they are at most
    /// `readLimit`, else mapped, so a file claiming more than it holds (a sparse one) costs no
    /// allocation. For files whose size nothing vouches for: the journal, and the segments and
    /// blobs that fsck and a rebuild scan.
    ///
    /// `mappingFrom`: map from this many bytes on, falling back to a read when mapping fails.
    /// The open's replay maps a journal of 1 MiB and more: a `read` of it spent as long
    /// faulting in fresh memory and copying as the replay spent applying a fifth of its
    /// records, where a mapping shows the page cache as it is. The price is a pack segment's
    /// (those are mapped for every read): an I/O error while the mapped bytes are read is a
    /// SIGBUS, not a thrown error.
    ///
    ///     try MappedFile.withContents(of: fd, from: start, size: size, path: path, io: io, mappingFrom: 1 << 20) { replay($0) }
    static func withContents<Result>(of fd: FileDescriptor, from offset: Int64 = 0, size: Int64, path: CachePath, io: FileIO,
                                     mappingFrom threshold: Int = readLimit + 1,
                                     _ body: (UnsafeRawBufferPointer) throws -> Result) throws -> Result {
        let count = Int(max(0, size - offset))
        func bodyOnMapped(_ mapped: MappedFile?) throws -> Result {
            try withBytes(of: mapped) { try body(UnsafeRawBufferPointer(rebasing: $0[min(Int(offset), $0.count)...])) }
        }
        if count > readLimit {
            return try bodyOnMapped(try MappedFile(fd, count: Int(size), path: path, io: io, forReadingOnly: true))
        }
        if count >= threshold, let mapped = try? MappedFile(fd, count: Int(size), path: path, io: io, forReadingOnly: true) {
            return try bodyOnMapped(mapped)
        }
        return try io.read(fd, count: count, at: offset, path: path).withUnsafeBytes(body)
    }

    /// `withContents(of:…)` for the file at `path`; `nil` when it does not exist or is larger
    /// than `limit`.
    static func withContents<Result>(of path: CachePath, io: FileIO, atMost limit: Int64 = .max,
                                     _ body: (UnsafeRawBufferPointer) throws -> Result) throws -> Result? {
        guard let fd = try io.openIfExists(path) else { return nil }
        defer { io.close(fd) }
        let size = try io.fileSize(fd, path: path)
        guard size <= limit else { return nil }
        return try withContents(of: fd, size: size, path: path, io: io, body)
    }

    /// Calls `body` with the mapped bytes (empty for `nil`, an empty file), keeping the mapping
    /// alive until it returns: Swift may release an object after its last use, so `bytes` must
    /// never outlive a call like this one.
    ///
    ///     let header = MappedFile.withBytes(of: mapped) { JournalFormat.decodeHeader($0) }
    static func withBytes<Result>(of mapped: MappedFile?, _ body: (UnsafeRawBufferPointer) throws -> Result) rethrows -> Result {
        try withExtendedLifetime(mapped) { try body(mapped?.bytes ?? UnsafeRawBufferPointer(start: nil, count: 0)) }
    }
}
