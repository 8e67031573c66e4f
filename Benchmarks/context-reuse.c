/* Does reusing compression contexts pay? Times LZ4 frame and zlib compression of 4 KiB and
 * 64 KiB values with a context created per call against one reused (reset) context, the way
 * Sources/CLZ4 and Sources/CZlib use them. Medians of 5 rounds of 20,000 (4 KiB) / 2,000 calls.
 *
 *   cc -O2 Benchmarks/context-reuse.c -llz4 -lz -o /tmp/context-reuse && /tmp/context-reuse
 */
#include "../Sources/CLZ4/shim.h"
#include "../Sources/CZlib/shim.h"
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec / 1e9; }
static int cmp(const void *a, const void *b) { double x = *(const double *)a, y = *(const double *)b; return (x > y) - (x < y); }

static void sample(unsigned char *out, size_t n) {
    static const char *words[] = {"cache ", "blob ", "journal ", "segment ", "digest ", "key ", "value ", "index "};
    unsigned long long s = 42; size_t i = 0;
    while (i < n) { s = s * 6364136223846793005ULL + 1442695040888963407ULL;
        const char *w = words[(s >> 40) % 8]; while (*w && i < n) out[i++] = (unsigned char)*w++;
        if ((s >> 60) == 0 && i < n) out[i++] = (unsigned char)(s >> 33); }
}

int main(void) {
    size_t sizes[] = {4096, 65536};
    for (int z = 0; z < 2; z++) {
        size_t size = sizes[z]; int calls = size == 4096 ? 20000 : 2000;
        unsigned char *in = malloc(size); sample(in, size);
        size_t cap = blobcache_lz4_frame_bound(size) + compressBound(size); unsigned char *out = malloc(cap);
        double t[5][5];
        void *state = malloc(LZ4_sizeofState());
        for (int r = 0; r < 5; r++) {
            double s = now();
            for (int i = 0; i < calls; i++) { LZ4F_cctx *c; LZ4F_createCompressionContext(&c, LZ4F_VERSION);
                blobcache_lz4_compress_frame(c, out, cap, in, size); LZ4F_freeCompressionContext(c); }
            t[0][r] = (now() - s) / calls;
            LZ4F_cctx *c; LZ4F_createCompressionContext(&c, LZ4F_VERSION); s = now();
            for (int i = 0; i < calls; i++) blobcache_lz4_compress_frame(c, out, cap, in, size);
            t[1][r] = (now() - s) / calls; LZ4F_freeCompressionContext(c);
            s = now();
            for (int i = 0; i < calls; i++) { z_stream *d = blobcache_deflate_create(6);
                blobcache_deflate(d, out, cap, in, size); blobcache_deflate_destroy(d); }
            t[2][r] = (now() - s) / calls;
            z_stream *d = blobcache_deflate_create(6); s = now();
            for (int i = 0; i < calls; i++) blobcache_deflate(d, out, cap, in, size);
            t[3][r] = (now() - s) / calls; blobcache_deflate_destroy(d);
            s = now();
            for (int i = 0; i < calls; i++) LZ4_compress_fast_extState(state, (const char *)in, (char *)out, (int)size, (int)cap, 1);
            t[4][r] = (now() - s) / calls;
        }
        const char *names[] = {"lz4 frame, new context per call", "lz4 frame, reused context      ",
                               "zlib-6, new stream per call    ", "zlib-6, reused (reset) stream  ",
                               "lz4 bare block, reused state   "};
        for (int k = 0; k < 5; k++) { qsort(t[k], 5, sizeof(double), cmp);
            printf("%6zu B  %s  %8.2f us\n", size, names[k], t[k][2] * 1e6); }
        free(in); free(out); free(state);
    }
    return 0;
}
