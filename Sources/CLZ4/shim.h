#ifndef BLOBCACHE_CLZ4_SHIM_H
#define BLOBCACHE_CLZ4_SHIM_H
#include <lz4.h>
#include <lz4frame.h>
#include <string.h>

/* Frame preferences for srcSize bytes: the smallest block size that holds the input (so
 * neither the bound nor the context's buffers are sized for 4 MB blocks when the value is 4 KB),
 * independent blocks, content size recorded, autoflush (no internal buffering), no frame
 * checksum (the container carries a CRC-32). */
static inline LZ4F_preferences_t blobcache_lz4_prefs(size_t srcSize) {
    LZ4F_preferences_t prefs;
    memset(&prefs, 0, sizeof prefs);
    prefs.frameInfo.contentSize = (unsigned long long)srcSize;
    prefs.frameInfo.blockMode = LZ4F_blockIndependent;
    prefs.frameInfo.blockSizeID = srcSize <= (64 << 10) ? LZ4F_max64KB
                                : srcSize <= (256 << 10) ? LZ4F_max256KB
                                : srcSize <= (1 << 20) ? LZ4F_max1MB : LZ4F_max4MB;
    prefs.autoFlush = 1;
    return prefs;
}

/* Upper bound of blobcache_lz4_compress_frame's output for srcSize bytes. */
static inline size_t blobcache_lz4_frame_bound(size_t srcSize) {
    LZ4F_preferences_t prefs = blobcache_lz4_prefs(srcSize);
    return LZ4F_compressBound(srcSize, &prefs) + LZ4F_HEADER_SIZE_MAX;
}

/* Compresses src into one complete LZ4 frame with a reused context. Returns the frame size,
 * or 0 when it does not fit in dstCapacity or on error. */
static inline size_t blobcache_lz4_compress_frame(LZ4F_cctx *cctx, void *dst, size_t dstCapacity,
                                                  const void *src, size_t srcSize) {
    LZ4F_preferences_t prefs = blobcache_lz4_prefs(srcSize);
    char *out = (char *)dst;
    size_t written = LZ4F_compressBegin(cctx, out, dstCapacity, &prefs);
    if (LZ4F_isError(written)) return 0;
    size_t n = LZ4F_compressUpdate(cctx, out + written, dstCapacity - written, src, srcSize, NULL);
    if (LZ4F_isError(n)) return 0;
    written += n;
    n = LZ4F_compressEnd(cctx, out + written, dstCapacity - written, NULL);
    if (LZ4F_isError(n)) return 0;
    return written + n;
}

/* Decodes one LZ4 frame that must expand to exactly dstSize bytes and use all of src.
 * Returns 0 on success, -1 on any damage. The context is reset before use. */
static inline int blobcache_lz4_decompress_frame(LZ4F_dctx *dctx, void *dst, size_t dstSize,
                                                 const void *src, size_t srcSize) {
    LZ4F_resetDecompressionContext(dctx);
    char *out = (char *)dst;
    const char *in = (const char *)src;
    size_t produced = 0, consumed = 0;
    for (;;) {
        size_t outAvail = dstSize - produced;
        size_t inAvail = srcSize - consumed;
        size_t hint = LZ4F_decompress(dctx, out + produced, &outAvail, in + consumed, &inAvail, NULL);
        if (LZ4F_isError(hint)) return -1;
        produced += outAvail;
        consumed += inAvail;
        if (hint == 0) break;                       /* frame complete */
        if (inAvail == 0 && outAvail == 0) return -1; /* no progress: truncated or too small */
        if (consumed == srcSize && hint != 0) return -1;
    }
    return (produced == dstSize && consumed == srcSize) ? 0 : -1;
}
#endif
