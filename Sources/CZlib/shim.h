#ifndef BLOBCACHE_CZLIB_SHIM_H
#define BLOBCACHE_CZLIB_SHIM_H
#include <zlib.h>
#include <stdlib.h>
#include <string.h>

/* zlib's init functions are macros, which Swift cannot call; these wrap them. */
static inline z_stream *blobcache_deflate_create(int level) {
    z_stream *strm = (z_stream *)calloc(1, sizeof(z_stream));
    if (!strm) return NULL;
    if (deflateInit(strm, level) != Z_OK) { free(strm); return NULL; }
    return strm;
}

static inline void blobcache_deflate_destroy(z_stream *strm) {
    if (strm) { deflateEnd(strm); free(strm); }
}

static inline z_stream *blobcache_inflate_create(void) {
    z_stream *strm = (z_stream *)calloc(1, sizeof(z_stream));
    if (!strm) return NULL;
    if (inflateInit(strm) != Z_OK) { free(strm); return NULL; }
    return strm;
}

static inline void blobcache_inflate_destroy(z_stream *strm) {
    if (strm) { inflateEnd(strm); free(strm); }
}

#define BLOBCACHE_ZCHUNK(n) ((n) > 0x40000000u ? 0x40000000u : (n))

/* One whole zlib stream from src into dst with a reused (reset) stream.
 * Returns the compressed size, or 0 when it does not fit in dstCapacity. */
static inline size_t blobcache_deflate(z_stream *strm, void *dst, size_t dstCapacity,
                                       const void *src, size_t srcSize) {
    if (deflateReset(strm) != Z_OK) return 0;
    strm->next_in = (Bytef *)src;
    strm->next_out = (Bytef *)dst;
    size_t consumed = 0, produced = 0;
    for (;;) {
        size_t inChunk = BLOBCACHE_ZCHUNK(srcSize - consumed);
        size_t outChunk = BLOBCACHE_ZCHUNK(dstCapacity - produced);
        if (outChunk == 0) return 0;
        strm->avail_in = (uInt)inChunk;
        strm->avail_out = (uInt)outChunk;
        int status = deflate(strm, consumed + inChunk == srcSize ? Z_FINISH : Z_NO_FLUSH);
        consumed += inChunk - strm->avail_in;
        produced += outChunk - strm->avail_out;
        if (status == Z_STREAM_END) return produced;
        if (status != Z_OK) return 0;
    }
}

/* Inflates one whole zlib stream that must expand to exactly dstSize bytes and use all of src.
 * Returns 0 on success, -1 on any damage. */
static inline int blobcache_inflate(z_stream *strm, void *dst, size_t dstSize,
                                    const void *src, size_t srcSize) {
    if (inflateReset(strm) != Z_OK) return -1;
    strm->next_in = (Bytef *)src;
    strm->next_out = (Bytef *)dst;
    size_t consumed = 0, produced = 0;
    for (;;) {
        size_t inChunk = BLOBCACHE_ZCHUNK(srcSize - consumed);
        size_t outChunk = BLOBCACHE_ZCHUNK(dstSize - produced);
        strm->avail_in = (uInt)inChunk;
        strm->avail_out = (uInt)outChunk;
        int status = inflate(strm, Z_NO_FLUSH);
        consumed += inChunk - strm->avail_in;
        produced += outChunk - strm->avail_out;
        if (status == Z_STREAM_END) break;
        if (status != Z_OK) return -1;
    }
    return (produced == dstSize && consumed == srcSize) ? 0 : -1;
}

/* Starts loading the cache line at `address` for writing, without waiting for it: Swift has no
 * prefetch. The journal replay, which also takes its CRC-32 from this module, asks for a batch
 * of records' hash-table buckets this way before it applies them (CacheIndex+Replay.swift). */
static inline void blobcache_prefetch(const void *address) { __builtin_prefetch(address, 1, 3); }

/* The same for a line that will only be read (a keyed read's blob record and pack record): no
 * request for ownership, so a segment another process appends to is not pulled away from it. */
static inline void blobcache_prefetch_read(const void *address) { __builtin_prefetch(address, 0, 3); }
#endif
