// XXH64 against XXH3-64 over 1 MiB in the cache, xxHash's own code (Debian libxxhash-dev's header):
// what made XXH3 the loose blob checksum (docs/FORMAT.md, "Loose blob file": version 3). Prints
// GB/s, three rounds.
//
//     cc -O2 -mavx2 Benchmarks/hash-speed.c -o /tmp/hash-speed && /tmp/hash-speed   # AVX2 kernel
//     cc -O2 Benchmarks/hash-speed.c -o /tmp/hash-speed && /tmp/hash-speed          # default (SSE2)
#define XXH_INLINE_ALL
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <xxhash.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

int main(void) {
    const size_t size = 1 << 20;
    const int rounds = 2000;
    unsigned char *bytes = malloc(size);
    for (size_t i = 0; i < size; i++) bytes[i] = (unsigned char)rand();
    unsigned long long sink = 0;
    for (int round = 0; round < 3; round++) {
        double start = now();
        for (int i = 0; i < rounds; i++) sink += XXH64(bytes, size, (unsigned long long)i);
        double xxh64 = now() - start;
        start = now();
        for (int i = 0; i < rounds; i++) sink += XXH3_64bits_withSeed(bytes, size, (unsigned long long)i);
        double xxh3 = now() - start;
        printf("XXH64 %.1f GB/s   XXH3 %.1f GB/s\n", rounds * size / xxh64 / 1e9, rounds * size / xxh3 / 1e9);
    }
    free(bytes);
    return sink == 42;
}
