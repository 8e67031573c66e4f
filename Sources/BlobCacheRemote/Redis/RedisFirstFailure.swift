import Synchronization

/// The first thing that broke a connection (a TLS handshake refused, a reset, a refusal of the
/// decoder), kept where the calling thread can read it: once the channel has closed, a command
/// written to it fails only with "I/O on closed channel", which would hide why.
///
///     if let cause = connection.firstFailure.error { throw describe(cause) }
final class RedisFirstFailure: Sendable {
    private let first = Mutex<(any Error)?>(nil)

    /// Keeps `error` unless one was kept already.
    func record(_ error: any Error) { first.withLock { if $0 == nil { $0 = error } } }

    /// The first failure recorded, if any.
    var error: (any Error)? { first.withLock { $0 } }
}
