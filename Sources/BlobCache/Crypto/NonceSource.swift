#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Synchronization

/// Random 96-bit GCM nonces, drawn from a 4 KiB buffer of CSPRNG output refilled with one call
/// (a CSPRNG call per seal cost 0.54 µs here, against 0.08 µs for the seal itself).
///
/// A nonce is never handed out twice: taken bytes are passed over, and the child of a `fork`
/// (which would share the buffer with its parent) fills a new one before it takes anything:
/// every fork's child bumps a process-wide fork generation (`pthread_atfork`), which the pool
/// compares at every nonce. (`getpid` at every nonce did the same for 0.14 µs a seal.)
///
///     let nonces = NonceSource()
///     nonces.next(into: header[0..<12])
final class NonceSource: Sendable {
    private struct Pool {
        var bytes = [UInt8](repeating: 0, count: 4096)
        var used = 4096
        var generation: UInt64 = 0
    }

    private let pool = Locked(Pool())

    init() { ForkGeneration.watch() }

    /// Writes a fresh nonce (`AESGCMKey.nonceSize` bytes) to `nonce`.
    func next(into nonce: UnsafeMutableRawBufferPointer) {
        precondition(nonce.count == AESGCMKey.nonceSize)
        let generation = ForkGeneration.current
        pool.withLock { pool in
            if pool.used + nonce.count > pool.bytes.count || pool.generation != generation {
                pool.bytes.withUnsafeMutableBytes { AESGCMKey.fillRandom($0) }
                pool.used = 0
                pool.generation = generation
            }
            pool.bytes.withUnsafeBytes { nonce.copyMemory(from: UnsafeRawBufferPointer(rebasing: $0[pool.used..<pool.used + nonce.count])) }
            pool.used += nonce.count
        }
    }
}

/// How many forks lie between this process and the one that first sealed: the one piece of
/// process-wide state the nonce pools need, since a fork copies every pool at once.
enum ForkGeneration {
    /// The current generation (0 in the process that registered the handler).
    static var current: UInt64 { counter.load(ordering: .relaxed) }

    /// Registers the fork handler (once per process; later calls do nothing).
    static func watch() { _ = registered }

    private static let counter = Atomic<UInt64>(0)
    private static let registered: Bool = {
        pthread_atfork(nil, nil, { ForkGeneration.counter.add(1, ordering: .relaxed) }) == 0
    }()
}
