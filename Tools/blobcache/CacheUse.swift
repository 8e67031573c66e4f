/// What a command does to the cache, which decides what the global options may do to it.
///
///     let cache = try global.open(for: .reading)
enum CacheUse: Equatable {
    /// Reads only (get, ls, stat, export): no cap applies, so nothing is evicted because of a
    /// flag, and a missing cache is exit 8 rather than a new empty one.
    case reading
    /// Removes entries (rm, expire, clear): no cap applies.
    case removing
    /// Adds or trims (put, import, evict, compact, serve): `--max-size` and `--max-entries`
    /// apply, evicting least recently used entries to meet them.
    case filling
}
