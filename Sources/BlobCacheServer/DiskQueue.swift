import Dispatch

/// Runs the cache's blocking disk work off the NIO event loops and Swift's cooperative threads.
///
///     let bytes = try await DiskQueue.run { try cache.bytes(forKey: key) }
enum DiskQueue {
    private static let queue = DispatchQueue(label: "BlobCacheServer.disk", qos: .userInitiated, attributes: .concurrent)

    /// Runs `body` on the disk queue and returns (or throws) what it did.
    static func run<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            queue.async { continuation.resume(with: Result { try body() }) }
        }
    }
}
