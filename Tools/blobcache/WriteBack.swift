#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Starts write-back of a file's dirty pages without waiting for it (Linux's
/// `sync_file_range(SYNC_FILE_RANGE_WRITE)`): a writer of large files calls it every `stride`
/// bytes so its dirty pages reach the disk as it goes. Elsewhere, or where the C library does
/// not have it, it does nothing.
///
///     WriteBack.start(fd, from: 0, count: WriteBack.stride)
enum WriteBack {
    /// How many bytes of one file are written between two calls of `start`.
    static let stride = 8 << 20

    private typealias SyncFileRange = @convention(c) (Int32, Int64, Int64, UInt32) -> Int32

    /// The C library's `sync_file_range`, looked up at run time: Swift's Glibc module leaves
    /// out GNU extensions.
    private static let syncFileRange: SyncFileRange? = {
        #if os(Linux)
        guard let symbol = dlsym(dlopen(nil, RTLD_NOW), "sync_file_range") else { return nil }
        return unsafeBitCast(symbol, to: SyncFileRange.self)
        #else
        return nil
        #endif
    }()

    /// `SYNC_FILE_RANGE_WRITE` (Linux's value).
    private static let write: UInt32 = 2

    /// Asks the kernel to start writing `count` bytes of `fd` from `offset` to disk; errors are
    /// ignored (it is advice: the data is written either way).
    ///
    ///     WriteBack.start(fd, from: 0, count: 8 << 20)
    static func start(_ fd: Int32, from offset: Int, count: Int) {
        _ = syncFileRange?(fd, Int64(offset), Int64(count), write)
    }
}
