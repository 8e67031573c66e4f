#ifndef BLOBCACHE_CHIREDIS_SHIM_H
#define BLOBCACHE_CHIREDIS_SHIM_H
/* hiredis, Debian's libhiredis-dev: the synchronous client RedisRemoteStore drives with
 * redisCommandArgv (the variadic redisCommand is not callable from Swift). */
#include <hiredis/hiredis.h>
#include <string.h>

/* The reply types, as functions: macros with casts do not import into Swift. */
static inline int blobcache_redis_reply_string(void) { return REDIS_REPLY_STRING; }
static inline int blobcache_redis_reply_integer(void) { return REDIS_REPLY_INTEGER; }
static inline int blobcache_redis_reply_nil(void) { return REDIS_REPLY_NIL; }
static inline int blobcache_redis_reply_status(void) { return REDIS_REPLY_STATUS; }
static inline int blobcache_redis_reply_error(void) { return REDIS_REPLY_ERROR; }

/* The context's error message (a char array, which Swift sees as a tuple). */
static inline const char *blobcache_redis_errstr(const redisContext *context) { return context->errstr; }
/* Bytes received and not yet parsed into a reply. */
static inline size_t blobcache_redis_buffered(const redisContext *context) {
    const redisReader *reader = context->reader;
    return reader && reader->len > reader->pos ? reader->len - reader->pos : 0;
}

/* The length a bulk string announces when the unparsed bytes begin one ("$N\r\n"), read from
 * its header alone so that a reply can be refused before its bytes are gathered; -1 when they
 * do not begin one or its header is not complete yet. Lengths past 2^50 are returned as 2^50. */
static inline long long blobcache_redis_announced_bulk(const redisContext *context) {
    const redisReader *reader = context->reader;
    if (!reader || !reader->buf || reader->pos >= reader->len) return -1;
    const char *bytes = reader->buf + reader->pos;
    size_t count = reader->len - reader->pos;
    if (bytes[0] != '$') return -1;
    long long length = 0;
    for (size_t index = 1; index < count; index++) {
        char digit = bytes[index];
        if (digit == '\r') return index > 1 ? length : -1;
        if (digit < '0' || digit > '9') return -1;
        length = length * 10 + (digit - '0');
        if (length >= (1LL << 50)) return 1LL << 50;
    }
    return -1;
}
#endif
