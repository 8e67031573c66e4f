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

/* Checks the first line of a reply before hiredis parses any of it: 0 while the line is not
 * complete yet; 1 when it is a status, an error, an integer or a bulk string of at most `limit`
 * bytes; -1 for anything else (an array or other aggregate, which no command here answers, a
 * longer bulk string, or a first line longer than 64 KiB). */
static inline int blobcache_redis_check_header(const redisContext *context, long long limit) {
    const redisReader *reader = context->reader;
    if (!reader || !reader->buf || reader->pos >= reader->len) return 0;
    const char *bytes = reader->buf + reader->pos;
    size_t count = reader->len - reader->pos;
    const char *end = memchr(bytes, '\r', count);
    if (!end) return count > 65536 ? -1 : 0;
    switch (bytes[0]) {
    case '+': case '-': case ':':
        return 1;
    case '$': {
        long long length = 0;
        const char *digit = bytes + 1;
        if (digit < end && *digit == '-') return end - digit == 2 && digit[1] == '1' ? 1 : -1;
        if (digit == end) return -1;
        for (; digit < end; digit++) {
            if (*digit < '0' || *digit > '9') return -1;
            length = length * 10 + (*digit - '0');
            if (length > limit) return -1;
        }
        return 1;
    }
    default:
        return -1;
    }
}
#endif
