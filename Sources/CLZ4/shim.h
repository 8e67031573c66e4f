#ifndef BLOBCACHE_CLZ4_SHIM_H
#define BLOBCACHE_CLZ4_SHIM_H
#include <lz4.h>
#include <lz4frame.h>
#include <string.h>

/* Block size of the frames written for srcSize bytes (see blobcache_lz4_prefs): 64 KB up to
 * 64 KB of input, else 256 KB. These are the only two sizes written; a reader takes any. */
static inline size_t blobcache_lz4_block_max(size_t srcSize) {
    return srcSize <= (64 << 10) ? (64 << 10) : (256 << 10);
}

/* Frame preferences for srcSize bytes: the smallest block size that holds the input (so
 * neither the bound nor the context's buffers are sized for 4 MB blocks when the value is 4 KB),
 * independent blocks, content size recorded, autoflush (no internal buffering), no block or
 * content checksum (the container's XXH64-based checksum, in the loose blob or pack record
 * header, covers the payload). */
static inline LZ4F_preferences_t blobcache_lz4_prefs(size_t srcSize) {
    LZ4F_preferences_t prefs;
    memset(&prefs, 0, sizeof prefs);
    prefs.frameInfo.contentSize = (unsigned long long)srcSize;
    prefs.frameInfo.blockMode = LZ4F_blockIndependent;
    /* Up to 256 KB: one block. Larger: 256 KB blocks, which a reader decodes on several cores. */
    prefs.frameInfo.blockSizeID = blobcache_lz4_block_max(srcSize) == (64 << 10) ? LZ4F_max64KB : LZ4F_max256KB;
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

/* Writes the header of the frame blobcache_lz4_compress_frame writes for srcSize bytes
 * (LZ4F_HEADER_SIZE_MAX bytes of dst suffice); the context is left to the next begin.
 * Returns the header's size, or 0 on error. */
static inline size_t blobcache_lz4_frame_header(LZ4F_cctx *cctx, void *dst, size_t dstCapacity, size_t srcSize) {
    LZ4F_preferences_t prefs = blobcache_lz4_prefs(srcSize);
    size_t n = LZ4F_compressBegin(cctx, dst, dstCapacity, &prefs);
    return LZ4F_isError(n) ? 0 : n;
}

/* Bytes blobcache_lz4_encode_block may write for one block of blockMax bytes. */
static inline size_t blobcache_lz4_block_bound(size_t blockMax) {
    return 4 + (size_t)LZ4_compressBound((int)blockMax);
}

/* Encodes block `index` of src (blocks of blockMax bytes, the last one shorter) the way a frame
 * with independent blocks stores it: a 4-byte little-endian size, then the compressed bytes,
 * or the raw bytes with the size's high bit set when compressing does not make them smaller.
 * dst must hold blobcache_lz4_block_bound(blockMax) bytes. Returns the bytes written. */
static inline size_t blobcache_lz4_encode_block(const void *src, size_t srcSize, size_t blockMax, long index,
                                                void *dst) {
    const char *in = (const char *)src + (size_t)index * blockMax;
    size_t size = srcSize - (size_t)index * blockMax;
    if (size > blockMax) size = blockMax;
    unsigned char *out = (unsigned char *)dst;
    int n = LZ4_compress_default(in, (char *)out + 4, (int)size, LZ4_compressBound((int)blockMax));
    unsigned field;
    if (n <= 0 || (size_t)n >= size) {
        memcpy(out + 4, in, size);
        n = (int)size;
        field = (unsigned)size | 0x80000000u;
    } else {
        field = (unsigned)n;
    }
    out[0] = (unsigned char)field;
    out[1] = (unsigned char)(field >> 8);
    out[2] = (unsigned char)(field >> 16);
    out[3] = (unsigned char)(field >> 24);
    return 4 + (size_t)n;
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
/* One block of an LZ4 frame, as blobcache_lz4_frame_index finds it. */
typedef struct {
    size_t offset;       /* of the block's data in the frame */
    size_t size;         /* stored bytes */
    int uncompressed;    /* stored raw (the size field's high bit) */
} blobcache_lz4_block;

static inline unsigned blobcache_le32(const unsigned char *p) {
    return (unsigned)p[0] | (unsigned)p[1] << 8 | (unsigned)p[2] << 16 | (unsigned)p[3] << 24;
}

/* Where an index of an LZ4 frame stands (blobcache_lz4_frame_index_step): zero it to start. */
typedef struct {
    size_t pos;          /* the next byte to read */
    size_t blockMax;     /* from the frame descriptor, once read */
    long count;          /* blocks found so far */
    unsigned flags;      /* the descriptor's FLG byte, once read */
    int stage;           /* 0: before the frame header, 1: among the blocks */
} blobcache_lz4_index_state;

/* Indexes the blocks of an LZ4 frame whose blocks are independent, with no dictionary and no
 * block checksums (what blobcache_lz4_compress_frame writes), reading only src[0 ..< available]
 * of its srcSize bytes, so that a frame still arriving (being decrypted) is indexed as it comes:
 * each call goes on from *state and adds the blocks that have wholly arrived. Returns 1 once the
 * frame is indexed to its end, 0 when it needs more bytes (never when available == srcSize), or
 * -1 when the frame is of another kind, damaged, or has more than capacity blocks: the caller
 * then decodes it with LZ4F. */
static inline int blobcache_lz4_frame_index_step(const void *src, size_t available, size_t srcSize,
                                                 blobcache_lz4_index_state *state,
                                                 blobcache_lz4_block *blocks, long capacity) {
    const unsigned char *p = (const unsigned char *)src;
    if (available > srcSize) return -1;
    if (state->stage == 0) {
        if (srcSize < 7) return -1;
        if (available < 6) return 0;
        if (blobcache_le32(p) != 0x184D2204u) return -1;
        unsigned flg = p[4], bd = p[5];
        if ((flg >> 6) != 1 || !(flg & 0x20) || (flg & 0x10) || (flg & 0x01)) return -1;
        if ((flg & 0x02) || (bd & 0x8F)) return -1;           /* reserved bits, which LZ4F refuses */
        unsigned id = (bd >> 4) & 7;
        if (id < 4) return -1;
        size_t headerEnd = 6 + ((flg & 0x08) ? 8 : 0) + 1;   /* descriptor, content size, header checksum */
        if (headerEnd > srcSize) return -1;
        if (headerEnd > available) return 0;
        state->flags = flg;
        state->blockMax = (size_t)1 << (8 + 2 * id);
        state->pos = headerEnd;
        state->count = 0;
        state->stage = 1;
    }
    for (;;) {
        size_t pos = state->pos;
        if (pos + 4 > srcSize) return -1;
        if (pos + 4 > available) return 0;
        unsigned field = blobcache_le32(p + pos);
        if (field == 0) {                            /* end mark, then the content checksum */
            size_t end = pos + 4 + ((state->flags & 0x04) ? 4 : 0);
            return end == srcSize ? 1 : -1;
        }
        size_t size = field & 0x7FFFFFFFu;
        if (size > state->blockMax || pos + 4 + size > srcSize || state->count == capacity) return -1;
        if (pos + 4 + size > available) return 0;
        blocks[state->count].offset = pos + 4;
        blocks[state->count].size = size;
        blocks[state->count].uncompressed = (field & 0x80000000u) != 0;
        state->count++;
        state->pos = pos + 4 + size;
    }
}

/* Indexes a whole frame (blobcache_lz4_frame_index_step on all of it). Returns the number of
 * blocks and sets *blockMax, or -1. */
static inline long blobcache_lz4_frame_index(const void *src, size_t srcSize, blobcache_lz4_block *blocks,
                                             long capacity, size_t *blockMax) {
    blobcache_lz4_index_state state = {0, 0, 0, 0, 0};
    if (blobcache_lz4_frame_index_step(src, srcSize, srcSize, &state, blocks, capacity) != 1) return -1;
    *blockMax = state.blockMax;
    return state.count;
}

/* Whether an indexed frame's header leaves nothing for LZ4F to check on a small value's fast
 * path: no content checksum (those frames go to LZ4F, which verifies it), and a content size,
 * if recorded, of exactly dstSize. The header checksum byte is not checked; the container's
 * checksum or GCM tag covers every byte of the frame. */
static inline int blobcache_lz4_header_settled(const void *frame, size_t frameSize, size_t dstSize) {
    const unsigned char *p = (const unsigned char *)frame;
    if (frameSize < 7 || (p[4] & 0x04)) return 0;
    if (!(p[4] & 0x08)) return 1;
    if (frameSize < 15) return 0;
    unsigned long long size = (unsigned long long)blobcache_le32(p + 6) | (unsigned long long)blobcache_le32(p + 10) << 32;
    return size == (unsigned long long)dstSize;
}

/* Whether frame (frameSize bytes) is what the small-value fast paths decode: one independent
 * block without checksums, holding 1 to blockMax bytes of content, its header settled for
 * dstSize (blobcache_lz4_header_settled); if so, *block and *blockMax say where it is. */
static inline int blobcache_lz4_one_settled_block(const void *frame, size_t frameSize, size_t dstSize,
                                                  blobcache_lz4_block *block, size_t *blockMax) {
    return blobcache_lz4_frame_index(frame, frameSize, block, 1, blockMax) == 1
        && dstSize > 0 && dstSize <= *blockMax
        && blobcache_lz4_header_settled(frame, frameSize, dstSize);
}

/* Room for decoding in place (blobcache_lz4_decode_in_place) dstSize bytes from a frame of
 * frameSize bytes: lz4.h's in-place buffer size for dstSize (dstSize + dstSize/256 + 32, its
 * LZ4_DECOMPRESS_INPLACE_BUFFER_SIZE), plus the 8 bytes at most that follow the block in the
 * frame (end mark and content checksum), and never less than the frame. */
static inline size_t blobcache_lz4_in_place_capacity(size_t dstSize, size_t frameSize) {
    size_t room = dstSize + (dstSize >> 8) + 32 + 8;
    return room > frameSize ? room : frameSize;
}

/* Decodes in place: buf (capacity bytes, blobcache_lz4_in_place_capacity) holds in its last
 * frameSize bytes an LZ4 frame of one settled block (blobcache_lz4_one_settled_block), whose
 * content goes to buf[0 ..< dstSize]. LZ4 reads the block ahead of where it writes (lz4.h, "In-place
 * compression and decompression"), which holds for a block smaller than its content; other
 * frames are refused before a byte is written. Returns 0 when the content is exactly dstSize
 * bytes; 1 when the frame is not of that kind (buf untouched); -1 when the block does not
 * decode to dstSize bytes (buf then holds nothing of value). */
static inline int blobcache_lz4_decode_in_place(void *buf, size_t capacity, size_t frameSize, size_t dstSize) {
    if (frameSize > capacity || capacity < blobcache_lz4_in_place_capacity(dstSize, frameSize)) return 1;
    char *frame = (char *)buf + (capacity - frameSize);
    blobcache_lz4_block block;
    size_t blockMax = 0;
    if (LZ4_versionNumber() < 10902) return 1;   /* in-place decoding is documented from lz4 1.9.2 */
    if (!blobcache_lz4_one_settled_block(frame, frameSize, dstSize, &block, &blockMax)) return 1;
    if (block.uncompressed) {
        if (block.size != dstSize) return -1;
        memmove(buf, frame + block.offset, dstSize);
        return 0;
    }
    if (block.size >= dstSize) return 1;   /* not smaller than its content: not safe in place */
    int n = LZ4_decompress_safe(frame + block.offset, (char *)buf, (int)block.size, (int)dstSize);
    return (n >= 0 && (size_t)n == dstSize) ? 0 : -1;
}

/* Decodes blocks first, first+step, … of an indexed frame into dst (dstSize bytes in all):
 * block i fills dst[i*blockMax ..< min((i+1)*blockMax, dstSize)] exactly. Returns 0, or -1. */
static inline int blobcache_lz4_decode_blocks(const void *src, const blobcache_lz4_block *blocks, long count,
                                              long first, long step, size_t blockMax, void *dst, size_t dstSize) {
    const char *in = (const char *)src;
    char *out = (char *)dst;
    for (long i = first; i < count; i += step) {
        size_t start = (size_t)i * blockMax;
        if (start >= dstSize) return -1;
        size_t expected = dstSize - start < blockMax ? dstSize - start : blockMax;
        if (blocks[i].uncompressed) {
            if (blocks[i].size != expected) return -1;
            memcpy(out + start, in + blocks[i].offset, expected);
        } else {
            int n = LZ4_decompress_safe(in + blocks[i].offset, out + start, (int)blocks[i].size, (int)expected);
            if (n < 0 || (size_t)n != expected) return -1;
        }
    }
    return 0;
}

/* Decodes a frame of one settled block (blobcache_lz4_one_settled_block: what the cache writes
 * for a value up to 256 KiB) with LZ4's block decoder, no LZ4F context needed: 0 when src's
 * content is exactly dstSize bytes, now in dst; nonzero otherwise (another kind of frame, or one
 * that does not decode; dst then holds nothing of value): the caller decodes with LZ4F. */
static inline int blobcache_lz4_decode_single_block(const void *src, size_t srcSize, void *dst, size_t dstSize) {
    blobcache_lz4_block block;
    size_t blockMax = 0;
    if (!blobcache_lz4_one_settled_block(src, srcSize, dstSize, &block, &blockMax)) return 1;
    return blobcache_lz4_decode_blocks(src, &block, 1, 0, 1, blockMax, dst, dstSize) == 0 ? 0 : -1;
}
#endif
