// The physical limits Benchmarks/peers.py prints beside the engines, on W3's blobs
// (the 1,000 × 1 MiB of synth_1m.bin, in memory): MD5 (OpenSSL's EVP, the digest BlobCache
// keys content by), LZ4 decoding (liblz4, each blob compressed once with LZ4_compress_default)
// and memcpy of 1 MiB blocks (a copy out of memory, as a read from the page cache costs at
// least). Each is the median of 3 passes over all blobs, in MB/s of input (MD5, memcpy) or of
// decoded output (LZ4); one JSON line.
//
//   cc -O2 Benchmarks/native/limits.c -o /tmp/limits -llz4 -lcrypto && /tmp/limits [--corpus DIR]
#include <fcntl.h>
#include <lz4.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

static int by_value(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median3(double samples[3]) {
    qsort(samples, 3, sizeof *samples, by_value);
    return samples[1];
}

int main(int argc, char **argv) {
    const char *corpus = argc == 3 && strcmp(argv[1], "--corpus") == 0 ? argv[2] : "/tmp/blobcorpus";
    const size_t size = 1 << 20, count = 1000;
    char path[4096];
    snprintf(path, sizeof path, "%s/synth_1m.bin", corpus);
    int fd = open(path, O_RDONLY);
    if (fd < 0) {
        fprintf(stderr, "limits: %s is missing: run python3 Benchmarks/corpus/make_corpus.py\n", path);
        return 2;
    }
    unsigned char *blobs = malloc(size * count);
    size_t done = 0;
    for (ssize_t n; done < size * count && (n = read(fd, blobs + done, size * count - done)) > 0;) done += (size_t)n;
    close(fd);
    size_t n = done / size;
    if (n == 0) return 2;

    double md5[3], lz4[3], copy[3];
    unsigned char digest[16], *out = malloc(size);
    unsigned int length;
    for (int round = 0; round < 3; round++) {
        double start = now();
        for (size_t i = 0; i < n; i++) EVP_Digest(blobs + i * size, size, digest, &length, EVP_md5(), NULL);
        md5[round] = n * size / 1e6 / (now() - start);
        start = now();
        for (size_t i = 0; i < n; i++) {
            memcpy(out, blobs + i * size, size);
            __asm__ volatile("" : : "r"(out) : "memory");   // the copy is made
        }
        copy[round] = n * size / 1e6 / (now() - start);
    }

    int bound = LZ4_compressBound((int)size);
    char *compressed = malloc((size_t)bound * n);
    int *sizes = malloc(n * sizeof *sizes);
    size_t stored = 0;
    for (size_t i = 0; i < n; i++) {
        sizes[i] = LZ4_compress_default((const char *)blobs + i * size, compressed + (size_t)bound * i, (int)size, bound);
        stored += (size_t)sizes[i];
    }
    for (int round = 0; round < 3; round++) {
        double start = now();
        for (size_t i = 0; i < n; i++) {
            if (LZ4_decompress_safe(compressed + (size_t)bound * i, (char *)out, sizes[i], (int)size) != (int)size) {
                fprintf(stderr, "limits: LZ4 did not decode blob %zu\n", i);
                return 2;
            }
        }
        lz4[round] = n * size / 1e6 / (now() - start);
    }
    printf("{\"blobs\": %zu, \"md5MBps\": %.1f, \"memcpyMBps\": %.1f, \"lz4DecodeMBps\": %.1f, \"lz4Ratio\": %.3f}\n",
           n, median3(md5), median3(copy), median3(lz4), (double)(n * size) / stored);
    free(blobs), free(out), free(compressed), free(sizes);
    return 0;
}
