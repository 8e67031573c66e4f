
/// A few reusable native compression contexts, so each call pays neither allocation nor set-up.
///
/// Contexts are taken for one call and given back; at most `capacity` idle ones are kept.
final class ContextPool: Sendable {
    /// A native context; `@unchecked Sendable` because one is used by one call at a time.
    private struct Handle: @unchecked Sendable { let pointer: UnsafeMutableRawPointer }

    private let idle = Locked<[Handle]>([])
    private let make: @Sendable () -> UnsafeMutableRawPointer?
    private let destroy: @Sendable (UnsafeMutableRawPointer) -> Void
    private let capacity: Int

    init(capacity: Int = 8,
         make: @escaping @Sendable () -> UnsafeMutableRawPointer?,
         destroy: @escaping @Sendable (UnsafeMutableRawPointer) -> Void) {
        self.capacity = capacity
        self.make = make
        self.destroy = destroy
    }

    /// Runs `body` with a context; `nil` is passed when none could be created (out of memory).
    func withContext<T>(_ body: (UnsafeMutableRawPointer?) throws -> T) rethrows -> T {
        try withContext(reusableAfter: { _ in true }, body)
    }

    /// Runs `body` with a context, which is kept for later calls only if `reusable` says so of
    /// the result: a decoder's context that failed on damaged input is destroyed, since LZ4F's,
    /// once a frame fails mid-block, fails later valid frames of several blocks even after
    /// `LZ4F_resetDecompressionContext` (CodecTests.decoderRecoversFromDamage).
    ///
    ///     let ok = pool.withContext(reusableAfter: { $0 }) { context in decode(with: context) }
    func withContext<T>(reusableAfter reusable: (T) -> Bool, _ body: (UnsafeMutableRawPointer?) throws -> T) rethrows -> T {
        let context = idle.withLock { $0.popLast()?.pointer } ?? make()
        var keep = true
        defer {
            if let context {
                let handle = Handle(pointer: context)
                let kept = keep && idle.withLock { contexts in
                    guard contexts.count < capacity else { return false }
                    contexts.append(handle)
                    return true
                }
                if !kept { destroy(context) }
            }
        }
        let result = try body(context)
        keep = reusable(result)
        return result
    }

    deinit {
        for handle in idle.withLock({ $0 }) { destroy(handle.pointer) }
    }
}
