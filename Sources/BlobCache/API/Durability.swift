/// What a returned `set` survives.
///
///     var configuration = BlobCache.Configuration()
///     configuration.durability = .powerLossSafe
public enum Durability: Sendable, Hashable {
    /// No fsync. A returned set survives the process crashing (its records are in the kernel),
    /// but not the machine losing power. The default; a cache can be rebuilt.
    case processCrashSafe
    /// fsync the blob, its directory and the journal before a set returns: it survives power loss.
    /// On Apple's systems each of these is `fcntl(F_FULLFSYNC)`, since their `fsync` leaves the
    /// data in the drive's cache (plain `fsync` only on a file system without it).
    case powerLossSafe
}
