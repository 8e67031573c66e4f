import SystemPackage
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A whole file mapped read-only into memory, unmapped when released. Reading a large file
/// this way skips copying it into freshly zeroed pages: the mapping shows the page cache.
final class MappedFile {
    let bytes: UnsafeRawBufferPointer

    /// Maps the file at `path` (its pages prefaulted); `nil` when it does not exist.
    init?(_ path: FilePath) throws {
        guard let fd = try FileIO.openIfExists(path) else { return nil }
        defer { try? fd.close() }
        let size = Int(try FileIO.fileSize(fd, path: path))
        guard size > 0 else {
            bytes = UnsafeRawBufferPointer(start: nil, count: 0)
            return
        }
        guard let base = mmap(nil, size, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd.rawValue, 0),
              base != MAP_FAILED else {
            throw BlobCacheError.io(operation: "mmap", path: path.string, errno: .last)
        }
        bytes = UnsafeRawBufferPointer(start: base, count: size)
    }

    deinit {
        if let base = bytes.baseAddress { munmap(UnsafeMutableRawPointer(mutating: base), bytes.count) }
    }
}
