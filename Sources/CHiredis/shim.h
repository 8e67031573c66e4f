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
#endif
