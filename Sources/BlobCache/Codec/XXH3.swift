import CXXHash

/// XXH3-64 (seed 0), xxHash's current 64-bit hash, from the system's xxHash (its header; the
/// AVX2 kernel is picked at run time where the processor has it): a loose blob's checksum from
/// format 3 on (docs/FORMAT.md). With AVX2 it hashes about 2.5 times as fast as XXH64, which had
/// become the critical path of a large raw get (a 1 MiB read was a copy at 22 GB/s, then
/// XXH64 at 24 GB/s from the cache; XXH3 runs at 61 GB/s there: Benchmarks/hash-speed.c).
///
///     let checksum = XXH3.hash(payload, after: header)
enum XXH3 {
    /// XXH3-64 of `head` followed by `body`, as if they were one buffer.
    static func hash(_ body: UnsafeRawBufferPointer, after head: UnsafeRawBufferPointer) -> UInt64 {
        blobcache_xxh3_64_after(head.baseAddress, head.count, body.baseAddress, body.count)
    }

    /// `hash(body, after: head)` with xxHash's default kernel whatever the processor has: the
    /// kernels must agree, which tests check on a processor with AVX2.
    static func hashWithDefaultKernel(_ body: UnsafeRawBufferPointer, after head: UnsafeRawBufferPointer) -> UInt64 {
        blobcache_xxh3_64_default_kernel(head.baseAddress, head.count, body.baseAddress, body.count)
    }

    /// Whether the AVX2 kernel is the one in use here.
    static var usesAVX2: Bool { blobcache_xxh3_uses_avx2() != 0 }

    /// XXH3-64 over bytes that arrive in pieces, in order; the digest is `hash` of them all.
    ///
    ///     let stream = XXH3.Stream()
    ///     stream.update(header)
    ///     let digest = stream.digest(after: payload)
    final class Stream {
        private let state: OpaquePointer

        init() {
            guard let state = blobcache_xxh3_create() else { fatalError("out of memory for an XXH3 state") }
            self.state = state
        }

        deinit { blobcache_xxh3_free(state) }

        /// Feeds the next bytes.
        func update(_ bytes: UnsafeRawBufferPointer) {
            blobcache_xxh3_update(state, bytes.baseAddress, bytes.count)
        }

        /// The digest of everything fed so far followed by `tail`; the stream itself is left as
        /// it was.
        func digest(after tail: UnsafeRawBufferPointer = UnsafeRawBufferPointer(start: nil, count: 0)) -> UInt64 {
            blobcache_xxh3_digest(state, tail.baseAddress, tail.count)
        }
    }
}
