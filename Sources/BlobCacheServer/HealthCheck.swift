import BlobCache
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// What `/healthz` checks: that the cache is open, and that its directory can take a write
/// (not mounted read-only, not out of space, writable by this process). It writes nothing.
///
///     if let problem = HealthCheck.problem(with: cache) { … 503 … }
enum HealthCheck {
    /// Why the cache cannot serve writes now, or nil when it can (blocking: call it on the disk queue).
    static func problem(with cache: BlobCache) -> String? {
        do {
            _ = try cache.totals()
        } catch BlobCacheError.closed {
            return "the cache is closed"
        } catch {
            return "the cache cannot be read"
        }
        var figures = statvfs()
        guard statvfs(cache.directory, &figures) == 0 else { return "the cache's file system cannot be queried" }
        if figures.f_flag & UInt(ST_RDONLY) != 0 { return "the cache's file system is read-only" }
        if figures.f_bavail == 0 { return "the cache's disk is full" }
        guard access(cache.directory, W_OK) == 0 else { return "the cache's directory is not writable by the server" }
        return nil
    }
}
