import SystemPackage
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A whole file mapped privately into memory (its pages prefaulted), unmapped when released.
/// Reading shows the page cache without copying it; a write copies the page it touches and
/// never reaches the file (MAP_PRIVATE).
final class MappedFile {
    let mutableBase: UnsafeMutableRawPointer
    let count: Int
    var bytes: UnsafeRawBufferPointer { UnsafeRawBufferPointer(start: mutableBase, count: count) }

    /// Maps the file at `path`; `nil` when it does not exist or is empty.
    init?(_ path: FilePath) throws {
        guard let fd = try FileIO.openIfExists(path) else { return nil }
        defer { try? fd.close() }
        let size = Int(try FileIO.fileSize(fd, path: path))
        guard size > 0 else { return nil }
        // Prefaulted read-only, then made writable: populating a writable private mapping
        // would copy every page up front; this way only pages that are written get copied.
        guard let base = mmap(nil, size, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd.rawValue, 0),
              base != MAP_FAILED else {
            throw BlobCacheError.io(operation: "mmap", path: path.string, errno: .last)
        }
        guard mprotect(base, size, PROT_READ | PROT_WRITE) == 0 else {
            munmap(base, size)
            throw BlobCacheError.io(operation: "mprotect", path: path.string, errno: .last)
        }
        mutableBase = base
        count = size
    }

    deinit { munmap(mutableBase, count) }
}
