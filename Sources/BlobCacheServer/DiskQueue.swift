import Dispatch
import Synchronization

/// Runs the cache's blocking disk work off the NIO event loops and Swift's cooperative threads.
///
///     let bytes = try await DiskQueue.run { try cache.bytes(forKey: key) }
enum DiskQueue {
    private static let queue = DispatchQueue(label: "BlobCacheServer.disk", qos: .userInitiated, attributes: .concurrent)

    /// Runs `body` on the disk queue and returns (or throws) what it did. Cancelled (a
    /// shutdown past its timeout), the caller gets `CancellationError` at once; `body` goes on
    /// to its end on the queue, since blocking work cannot be interrupted.
    static func run<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await run(on: queue, body)
    }

    /// `run(_:)` on another queue.
    static func run<T: Sendable>(on queue: DispatchQueue, _ body: @escaping @Sendable () throws -> T) async throws -> T {
        let once = OnceContinuation<T>()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                once.set(continuation)
                queue.async { once.resume(with: Result { try body() }) }
            }
        } onCancel: {
            once.resume(with: .failure(CancellationError()))
        }
    }
}

/// A continuation resumed by whichever comes first, the work or its cancellation.
final class OnceContinuation<T: Sendable>: Sendable {
    private enum State {
        case waiting
        case ready(CheckedContinuation<T, any Error>)
        case early(Result<T, any Error>)
        case done
    }

    private let state = Mutex<State>(.waiting)

    func set(_ continuation: CheckedContinuation<T, any Error>) {
        let early: Result<T, any Error>? = state.withLock { state in
            switch state {
            case .waiting:
                state = .ready(continuation)
                return nil
            case .early(let result):
                state = .done
                return result
            case .ready, .done:
                return nil
            }
        }
        if let early { continuation.resume(with: early) }
    }

    func resume(with result: Result<T, any Error>) {
        let continuation: CheckedContinuation<T, any Error>? = state.withLock { state in
            switch state {
            case .waiting:
                state = .early(result)
                return nil
            case .ready(let continuation):
                state = .done
                return continuation
            case .early, .done:
                return nil
            }
        }
        continuation?.resume(with: result)
    }
}
