/* Would serving a large raw value from a mapping, without a copy, pay? (issue 15, target 2.)
 * Writes 1,000 files of 1 MiB to a temporary folder, then times, per file: a read into fresh
 * memory (what the raw-file baseline does), that read then an XXH64 of it (a checked read with
 * the hash after the copy), and a mapping checked with XXH64 in place then unmapped (a zero-copy
 * read: the check must still cover every byte before any is handed out), with and without
 * MAP_POPULATE; and XXH64 of memory alone, the ceiling of any read checked by one sequential
 * hash. Prints the median of 5 rounds in MB/s.
 *
 *   cc -O2 Benchmarks/zero-copy.c -o /tmp/zero-copy && /tmp/zero-copy
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

enum { FILES = 1000, SIZE = 1 << 20, ROUNDS = 5 };

/* XXH64 as its specification gives it (the cache's own is Sources/BlobCache/Codec/XXHash64.swift). */
static const uint64_t K1 = 0x9E3779B185EBCA87ULL, K2 = 0xC2B2AE3D27D4EB4FULL, K3 = 0x165667B19E3779F9ULL,
                      K4 = 0x85EBCA77C2B2AE63ULL, K5 = 0x27D4EB2F165667C5ULL;
static uint64_t rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }
static uint64_t load(const uint8_t *p) { uint64_t v; memcpy(&v, p, 8); return v; }
static uint64_t round64(uint64_t acc, uint64_t lane) { return rotl(acc + lane * K2, 31) * K1; }
static uint64_t merge(uint64_t h, uint64_t acc) { return (h ^ round64(0, acc)) * K1 + K4; }
static uint64_t xxh64(const uint8_t *p, size_t n) {
    const uint8_t *end = p + n; uint64_t h;
    if (n >= 32) {
        uint64_t a = K1 + K2, b = K2, c = 0, d = -K1;
        for (; p + 32 <= end; p += 32) { a = round64(a, load(p)); b = round64(b, load(p + 8)); c = round64(c, load(p + 16)); d = round64(d, load(p + 24)); }
        h = merge(merge(merge(merge(rotl(a, 1) + rotl(b, 7) + rotl(c, 12) + rotl(d, 18), a), b), c), d);
    } else h = K5;
    h += n;
    for (; p + 8 <= end; p += 8) h = rotl(h ^ round64(0, load(p)), 27) * K1 + K4;
    if (p + 4 <= end) { uint32_t w; memcpy(&w, p, 4); h = rotl(h ^ (w * K1), 23) * K2 + K3; p += 4; }
    for (; p < end; p++) h = rotl(h ^ (*p * K5), 11) * K1;
    h = (h ^ (h >> 33)) * K2; h = (h ^ (h >> 29)) * K3; return h ^ (h >> 32);
}

static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec / 1e9; }
static int cmp(const void *a, const void *b) { double x = *(const double *)a, y = *(const double *)b; return (x > y) - (x < y); }
static char folder[] = "/tmp/zero-copy-XXXXXX";
static void path(char *out, int i) { snprintf(out, 64, "%s/%d", folder, i); }
static volatile uint64_t sink;

static void fresh_read(int hash) {
    char name[64];
    for (int i = 0; i < FILES; i++) {
        path(name, i); int fd = open(name, O_RDONLY); uint8_t *b = malloc(SIZE);
        if (read(fd, b, SIZE) != SIZE) abort();
        close(fd); sink += hash ? xxh64(b, SIZE) : b[i]; free(b);
    }
}
static void mapped(int populate) {
    char name[64];
    for (int i = 0; i < FILES; i++) {
        path(name, i); int fd = open(name, O_RDONLY);
        uint8_t *m = mmap(NULL, SIZE, PROT_READ, MAP_PRIVATE | (populate ? MAP_POPULATE : 0), fd, 0);
        if (m == MAP_FAILED) abort();
        close(fd); sink += xxh64(m, SIZE); munmap(m, SIZE);
    }
}
static uint8_t *memory;
static void in_memory(void) { for (int i = 0; i < FILES; i++) sink += xxh64(memory, SIZE); }

int main(void) {
    if (xxh64((const uint8_t *)"", 0) != 0xEF46DB3751D8E999ULL) return 2;   /* the specification's empty-input value */
    if (!mkdtemp(folder)) return 1;
    memory = malloc(SIZE);
    uint64_t s = 7; char name[64];
    for (int i = 0; i < FILES; i++) {
        for (int j = 0; j < SIZE; j += 8) { s = s * 6364136223846793005ULL + 1442695040888963407ULL; memcpy(memory + j, &s, 8); }
        path(name, i); int fd = open(name, O_CREAT | O_WRONLY | O_TRUNC, 0600);
        if (write(fd, memory, SIZE) != SIZE) return 1;
        close(fd);
    }
    const char *labels[] = {"read into fresh memory (the raw-file baseline)", "read, then XXH64", "mapped, XXH64 in place, unmapped",
                            "mapped with MAP_POPULATE, XXH64, unmapped", "XXH64 of memory alone"};
    double t[5][ROUNDS];
    for (int r = 0; r < ROUNDS; r++)
        for (int k = 0; k < 5; k++) {
            double start = now();
            switch (k) { case 0: fresh_read(0); break; case 1: fresh_read(1); break; case 2: mapped(0); break; case 3: mapped(1); break; default: in_memory(); }
            t[k][r] = FILES * (SIZE / 1e6) / (now() - start);
        }
    for (int k = 0; k < 5; k++) { qsort(t[k], ROUNDS, sizeof(double), cmp); printf("%-48s %6.0f MB/s (%.0f-%.0f)\n", labels[k], t[k][ROUNDS / 2], t[k][0], t[k][ROUNDS - 1]); }
    for (int i = 0; i < FILES; i++) { path(name, i); unlink(name); }
    rmdir(folder);
    return 0;
}
