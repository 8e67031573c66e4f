#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A value behind a `pthread_mutex_t`: the lock every shared state here uses. (Guard a value:
/// a `Locked<Void>` makes ThreadSanitizer see the lock's own field as the guarded variable.)
///
/// Not `Synchronization.Mutex`: on Linux ThreadSanitizer does not see that one's futex, and
/// reports races in correct programs; a pthread mutex it understands, so the suite runs
/// under `--sanitize=thread` with no suppressions. On glibc the mutex is adaptive: a thread
/// that finds it taken spins briefly before it sleeps, since the engine's lock is held for
/// well under a microsecond, and two readers that slept in `futex_wait` for it ran slower
/// together than one alone with a plain mutex, and faster with the adaptive one
/// (`workload --workloads readers` measures two readers against one).
///
///     let count = Locked(0)
///     count.withLock { $0 += 1 }
final class Locked<Value>: @unchecked Sendable {
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private var value: Value

    init(_ value: Value) {
        self.value = value
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        var attributes = pthread_mutexattr_t()
        pthread_mutexattr_init(&attributes)
        defer { pthread_mutexattr_destroy(&attributes) }
        #if canImport(Glibc)
        pthread_mutexattr_settype(&attributes, Int32(PTHREAD_MUTEX_ADAPTIVE_NP))
        #endif
        precondition(pthread_mutex_init(mutex, &attributes) == 0, "pthread_mutex_init failed")
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deinitialize(count: 1)
        mutex.deallocate()
    }

    /// Runs `body` with the value, holding the lock.
    func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }

    /// Runs `body` with the value if the lock is free now; `nil` (without waiting) when
    /// another thread holds it.
    func withLockIfAvailable<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result? {
        guard pthread_mutex_trylock(mutex) == 0 else { return nil }
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }
}
