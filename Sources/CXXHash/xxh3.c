// The shim's only code: xxHash's own streaming XXH3 with the kernel picked once per call, the way
// xxHash's x86 dispatcher (xxh_x86dispatch.c, not shipped by Debian) does it: the AVX2 kernels are
// compiled into a function marked target("avx2") and called only when the processor has AVX2.
//
// That call names xxHash's internal XXH3_update and kernels, whose signatures changed in 0.8.2,
// so it is compiled for 0.8.1 (Debian 12) alone; any other version uses xxHash's public streaming
// functions (its SSE2 or NEON kernel), which give the same digests. Under ThreadSanitizer, whose
// instrumentation skips 256-bit loads, the default kernel runs too, so the race checks still see
// every byte a hash reads.

#include <stdlib.h>

#if defined(__has_feature)
#  if __has_feature(thread_sanitizer)
#    define BLOBCACHE_UNDER_TSAN
#  endif
#endif

#if (defined(__x86_64__) || defined(__i386__)) && !defined(BLOBCACHE_UNDER_TSAN)
#  define XXH_X86DISPATCH
#  define XXH_DISPATCH_AVX2 1
#  define XXH_TARGET_AVX2 __attribute__((__target__("avx2")))
#  include <immintrin.h>
#endif
#define XXH_INLINE_ALL
#include <xxhash.h>
#include "CXXHash.h"

#if defined(XXH_X86DISPATCH) && XXH_VERSION_NUMBER == 801
#  define BLOBCACHE_XXH3_AVX2
#endif

struct blobcache_xxh3_stream {
    XXH3_state_t state;
};

#ifdef BLOBCACHE_XXH3_AVX2
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
#ifdef BLOBCACHE_XXH3_AVX2
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

uint64_t blobcache_xxh3_64_default_kernel(const void *head, size_t headCount, const void *body, size_t bodyCount) {
    XXH3_state_t state;
    (void)XXH3_64bits_reset(&state);
    if (headCount > 0) (void)XXH3_64bits_update(&state, head, headCount);
    if (bodyCount > 0) (void)XXH3_64bits_update(&state, body, bodyCount);
    return XXH3_64bits_digest(&state);
}

blobcache_xxh3_stream *blobcache_xxh3_create(void) {
    void *memory = NULL;
    if (posix_memalign(&memory, 64, sizeof(blobcache_xxh3_stream)) != 0) return NULL;
    blobcache_xxh3_stream *stream = memory;
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
