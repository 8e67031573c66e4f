#ifndef BLOBCACHE_CXXHASH_H
#define BLOBCACHE_CXXHASH_H

// XXH3-64 (seed 0, the default secret) from the system's xxHash (Debian libxxhash-dev), with its
// AVX2 kernel chosen at run time where the processor has it (xxHash 0.8.1; xxh3.c says why only
// there): the loose blob checksum of format 3 (docs/FORMAT.md). Only xxHash's header is used;
// nothing is linked.

#include <stddef.h>
#include <stdint.h>

/// XXH3-64 of `head` followed by `body`, as if they were one buffer.
uint64_t blobcache_xxh3_64_after(const void *head, size_t headCount, const void *body, size_t bodyCount);

/// A running XXH3-64: create, feed pieces in order, read the digest, free.
typedef struct blobcache_xxh3_stream blobcache_xxh3_stream;

/// A new stream (seed 0); NULL when memory runs out.
blobcache_xxh3_stream *blobcache_xxh3_create(void);
/// Feeds the next `count` bytes.
void blobcache_xxh3_update(blobcache_xxh3_stream *stream, const void *bytes, size_t count);
/// The digest of everything fed so far followed by `tail` (the stream itself is left as it was).
uint64_t blobcache_xxh3_digest(const blobcache_xxh3_stream *stream, const void *tail, size_t tailCount);
void blobcache_xxh3_free(blobcache_xxh3_stream *stream);

/// `blobcache_xxh3_64_after` with xxHash's default kernel whatever the processor (for tests: on
/// a processor with AVX2 the kernels must agree).
uint64_t blobcache_xxh3_64_default_kernel(const void *head, size_t headCount, const void *body, size_t bodyCount);

/// 1 when the AVX2 kernel is in use, else 0 (for tests and benchmarks).
int blobcache_xxh3_uses_avx2(void);

#endif
