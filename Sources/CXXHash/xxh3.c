// The shim's only code: xxHash's own streaming XXH3 with the kernel picked once per call, the way
// xxHash's x86 dispatcher (xxh_x86dispatch.c, not shipped by Debian) does it: the AVX2 kernels are
// compiled into functions marked target("avx2") and called only when the processor has AVX2.

#if defined(__x86_64__) || defined(__i386__)
#  define XXH_X86DISPATCH
#  define XXH_DISPATCH_AVX2 1
#  define XXH_TARGET_AVX2 __attribute__((__target__("avx2")))
#  define BLOBCACHE_XXH3_DISPATCH 1
#  include <immintrin.h>
#endif
#define XXH_INLINE_ALL
#include <stdlib.h>
#include <xxhash.h>
#include "CXXHash.h"

struct blobcache_xxh3_stream {
    XXH3_state_t state;
};

#if BLOBCACHE_XXH3_DISPATCH
static XXH_TARGET_AVX2 __attribute__((noinline)) void
update_avx2(XXH3_state_t *state, const void *bytes, size_t count) {
    (void)XXH3_update(state, (const xxh_u8 *)bytes, count, XXH3_accumulate_512_avx2, XXH3_scrambleAcc_avx2);
}

int blobcache_xxh3_uses_avx2(void) {
    static int answer = -1; // racing first calls store the same value
    int known = __atomic_load_n(&answer, __ATOMIC_RELAXED);
    if (known < 0) {
        __builtin_cpu_init();
        known = __builtin_cpu_supports("avx2") ? 1 : 0;
        __atomic_store_n(&answer, known, __ATOMIC_RELAXED);
    }
    return known;
}
#else
int blobcache_xxh3_uses_avx2(void) { return 0; }
#endif

static void update(XXH3_state_t *state, const void *bytes, size_t count) {
    if (count == 0) return;
#if BLOBCACHE_XXH3_DISPATCH
    if (blobcache_xxh3_uses_avx2()) { update_avx2(state, bytes, count); return; }
#endif
    (void)XXH3_64bits_update(state, bytes, count);
}

uint64_t blobcache_xxh3_64_after(const void *head, size_t headCount, const void *body, size_t bodyCount) {
    XXH3_state_t state;
    (void)XXH3_64bits_reset(&state);
    update(&state, head, headCount);
    update(&state, body, bodyCount);
    return XXH3_64bits_digest(&state);
}

blobcache_xxh3_stream *blobcache_xxh3_create(void) {
    blobcache_xxh3_stream *stream = NULL;
    if (posix_memalign((void **)&stream, 64, sizeof *stream) != 0) return NULL;
    (void)XXH3_64bits_reset(&stream->state);
    return stream;
}

void blobcache_xxh3_update(blobcache_xxh3_stream *stream, const void *bytes, size_t count) {
    update(&stream->state, bytes, count);
}

uint64_t blobcache_xxh3_digest(const blobcache_xxh3_stream *stream, const void *tail, size_t tailCount) {
    if (tailCount == 0) return XXH3_64bits_digest(&stream->state);
    XXH3_state_t copy;
    XXH3_copyState(&copy, &stream->state);
    update(&copy, tail, tailCount);
    return XXH3_64bits_digest(&copy);
}

void blobcache_xxh3_free(blobcache_xxh3_stream *stream) { free(stream); }
