#ifndef BLOBCACHE_CHIREDIS_SHIM_H
#define BLOBCACHE_CHIREDIS_SHIM_H
/* hiredis, Debian's libhiredis-dev: the synchronous client RedisRemoteStore drives with
 * redisCommandArgv (the variadic redisCommand is not callable from Swift). */
#include <hiredis/hiredis.h>
#endif
