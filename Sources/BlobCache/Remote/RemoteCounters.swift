/// What the remote tier did since this open (`cache.statistics().remote`).
///
///     let remote = cache.statistics().remote
///     print("\(remote.hits) remote hits, \(remote.errors) failures, \(remote.droppedWrites) writes dropped")
public struct RemoteCounters: Sendable, Equatable, Codable {
    /// Local misses the remote answered with a value that checked out (and was written back).
    public var hits = 0
    /// Local misses the remote could not answer: no record, no blob, or an expired record.
    public var misses = 0
    /// Records or blobs refused as damaged, not matching their name, or larger than the local
    /// byte cap (or 1 GiB) allows; never used, never written back.
    public var rejected = 0
    /// Calls that failed or timed out; each one makes the cache skip the remote for a while.
    public var errors = 0
    /// Reads that did not ask the remote because it failed recently (the circuit is open).
    public var skippedReads = 0
    /// Values (and removes) the write-behind queue delivered.
    public var writes = 0
    /// Writes given up: the queue was full, the remote had failed recently, or the call failed.
    public var droppedWrites = 0
    /// Bytes received from the remote (blob images and records).
    public var bytesRead = 0
    /// Bytes sent to the remote.
    public var bytesWritten = 0

    /// All zero.
    ///
    ///     let none = RemoteCounters()
    public init() {}
}
