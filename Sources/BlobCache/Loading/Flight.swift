/// One load of a missing key that any number of callers wait for
/// (`BlobCache.value(forKey:expiry:loadingWith:)`). The load runs in a task of its own, so a
/// caller that is cancelled stops waiting without cancelling it for the others.
final class Flight: Sendable {
    private struct State {
        var result: Result<[UInt8], any Error>?
        var waiters: [Int: CheckedContinuation<[UInt8], any Error>] = [:]
        /// Waiters cancelled before they were registered.
        var cancelledEarly: Set<Int> = []
        var nextWaiter = 0
    }

    private let state = Locked(State())

    /// Waits for the load's result; throws `CancellationError` at once when the calling task
    /// is cancelled (the load goes on).
    func wait() async throws -> [UInt8] {
        let waiter = state.withLock { state -> Int in
            state.nextWaiter += 1
            return state.nextWaiter
        }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<[UInt8], any Error>) in
                let ready = state.withLock { state -> Result<[UInt8], any Error>? in
                    if let result = state.result { return result }
                    if state.cancelledEarly.remove(waiter) != nil { return .failure(CancellationError()) }
                    state.waiters[waiter] = continuation
                    return nil
                }
                if let ready { continuation.resume(with: ready) }
            }
        } onCancel: {
            let continuation = state.withLock { state -> CheckedContinuation<[UInt8], any Error>? in
                if let continuation = state.waiters.removeValue(forKey: waiter) { return continuation }
                if state.result == nil { state.cancelledEarly.insert(waiter) }
                return nil
            }
            continuation?.resume(throwing: CancellationError())
        }
    }

    /// Callers waiting now (tests wait for all of theirs to have joined).
    var waiterCount: Int { state.withLock { $0.waiters.count } }

    /// Hands `result` to every waiter, and to any that comes later.
    func finish(_ result: Result<[UInt8], any Error>) {
        let waiting = state.withLock { state in
            state.result = result
            defer { state.waiters.removeAll() }
            return Array(state.waiters.values)
        }
        for continuation in waiting { continuation.resume(with: result) }
    }
}

/// The loads running now, by raw key.
final class FlightTable: Sendable {
    /// The flights by raw key. A struct of its own, so that creating the table (at every open)
    /// instantiates no `Dictionary` type: a process's first one keyed by `String` makes the
    /// Swift runtime scan every protocol conformance in the process for `String: Hashable`.
    private struct Running {
        var byKey = [ExactKey: Flight]()   // not `[:]`, whose initializer instantiates the storage type
    }

    private let running = Locked(Running())

    /// The flight loading `key`, and whether the caller must start it (it was not running).
    func flight(for key: String) -> (flight: Flight, isNew: Bool) {
        running.withLock { running in
            if let flight = running.byKey[ExactKey(key)] { return (flight, false) }
            let flight = Flight()
            running.byKey[ExactKey(key)] = flight
            return (flight, true)
        }
    }

    /// The flight loading `key` now, if any.
    func running(_ key: String) -> Flight? { running.withLock { $0.byKey[ExactKey(key)] } }

    /// Forgets `flight` (done): a caller after this starts a new one, which finds the stored value.
    func end(_ flight: Flight, for key: String) {
        running.withLock { running in
            if running.byKey[ExactKey(key)] === flight { running.byKey[ExactKey(key)] = nil }
        }
    }
}
