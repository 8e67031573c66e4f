// What lmdb_bench.c and rocksdb_bench.c share: the corpus (Benchmarks/corpus/README.md), the
// keys the Swift workload runner uses (W1: the manifest path; W2, W3: MD5 hex of the blob), and
// the workloads W1, W2, W2-mixed, W3 and W5 without a cap, driven through a small engine
// interface so that both programs replay exactly the same calls. Each program prints one JSON
// line, {"engine": ..., "results": [...]}, in the runner's format; Benchmarks/peers.py reads it.
#ifndef BENCH_COMMON_H
#define BENCH_COMMON_H
#define _GNU_SOURCE
#include <fcntl.h>
#include <ftw.h>
#include <openssl/evp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

// One engine: put and get as a cache's caller makes them. get returns the value's length (the
// value copied into memory the caller owns, then freed) or -1 on a miss. The begin/end hooks
// bracket a whole phase: no-ops for engines that commit each call, one transaction for a
// batched mode (its commit is inside the timed phase).
struct engine {
    const char *name;
    void *(*open)(const char *directory);
    void (*put)(void *db, const char *key, size_t key_length, const void *value, size_t length);
    long (*get)(void *db, const char *key, size_t key_length);
    void (*begin_writes)(void *db);
    void (*end_writes)(void *db);
    void (*begin_reads)(void *db);
    void (*end_reads)(void *db);
    void (*close)(void *db);
};

static void fail(const char *what, const char *detail) {
    fprintf(stderr, "%s: %s\n", what, detail ? detail : "failed");
    exit(2);
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

// The first `limit` bytes of a corpus file (all of it when limit is 0), in memory.
static unsigned char *load(const char *corpus, const char *name, size_t limit, size_t *length) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", corpus, name);
    int fd = open(path, O_RDONLY);
    if (fd < 0) fail(path, "missing: run python3 Benchmarks/corpus/make_corpus.py");
    struct stat info;
    fstat(fd, &info);
    size_t size = limit && (size_t)info.st_size > limit ? limit : (size_t)info.st_size;
    unsigned char *bytes = malloc(size ? size : 1);
    size_t done = 0;
    while (done < size) {
        ssize_t n = read(fd, bytes + done, size - done);
        if (n <= 0) fail(path, "short read");
        done += (size_t)n;
    }
    close(fd);
    *length = size;
    return bytes;
}

static void md5_hex(const void *bytes, size_t length, char out[33]) {
    unsigned char digest[16];
    unsigned int size = 0;
    EVP_Digest(bytes, length, digest, &size, EVP_md5(), NULL);
    for (int i = 0; i < 16; i++) sprintf(out + 2 * i, "%02x", digest[i]);
}

// The manifest: path, size and offset in concat.bin of every corpus file.
struct manifest {
    size_t count;
    char **paths;
    size_t *sizes, *offsets;
    unsigned char *concat;
    char *text;   // the manifest's text, which the paths point into
};

static struct manifest load_manifest(const char *corpus) {
    struct manifest m = {0};
    size_t length;
    char *text = (char *)load(corpus, "manifest.tsv", 0, &length);
    text = realloc(text, length + 1);
    text[length] = 0;
    m.text = text;
    size_t lines = 0;
    for (size_t i = 0; i < length; i++) lines += text[i] == '\n';
    m.paths = calloc(lines, sizeof *m.paths);
    m.sizes = calloc(lines, sizeof *m.sizes);
    m.offsets = calloc(lines, sizeof *m.offsets);
    char *line = strchr(text, '\n') + 1;   // the header line
    while (line && *line) {
        char *end = strchr(line, '\n');
        if (end) *end = 0;
        char *size = strchr(line, '\t');
        *size++ = 0;
        char *offset = strchr(size, '\t');
        *offset++ = 0;
        m.paths[m.count] = line;
        m.sizes[m.count] = strtoull(size, NULL, 10);
        m.offsets[m.count] = strtoull(offset, NULL, 10);
        m.count++;
        line = end ? end + 1 : NULL;
    }
    m.concat = load(corpus, "concat.bin", 0, &length);
    return m;
}

static void remove_tree(const char *path);
static int remove_entry(const char *path, const struct stat *info, int flag, struct FTW *walk) {
    (void)info, (void)flag, (void)walk;
    return remove(path);
}
static void remove_tree(const char *path) { nftw(path, remove_entry, 16, FTW_DEPTH | FTW_PHYS); }

// A fresh directory for one workload under the work directory.
static void fresh(const char *work, const char *name, char *out, size_t size) {
    snprintf(out, size, "%s/%s", work, name);
    remove_tree(out);
    mkdir(work, 0755);
    if (mkdir(out, 0755) != 0) fail(out, "cannot create");
}

static int printed;
static void emit(const char *workload, long ops, double seconds, long bytes, double hit_ratio, const char *note) {
    printf("%s{\"workload\": \"%s\", \"ops\": %ld, \"seconds\": %.9f, \"bytes\": %ld, \"opsPerSecond\": %.3f, "
           "\"megabytesPerSecond\": %.3f", printed++ ? ", " : "", workload, ops, seconds, bytes, ops / seconds,
           bytes / 1e6 / seconds);
    if (hit_ratio >= 0) printf(", \"hitRatio\": %.6f", hit_ratio);
    if (note) printf(", \"note\": \"%s\"", note);
    printf("}");
    fflush(stdout);
}

// Puts every (key, value), then gets every key, each phase timed after sync (page cache hot).
static void put_then_get(const struct engine *e, const char *work, const char *name, char **keys,
                         unsigned char **values, const size_t *lengths, size_t n) {
    char directory[4096];
    fresh(work, name, directory, sizeof directory);
    void *db = e->open(directory);
    long written = 0, read = 0;
    sync();
    double start = now();
    e->begin_writes(db);
    for (size_t i = 0; i < n; i++) {
        e->put(db, keys[i], strlen(keys[i]), values[i], lengths[i]);
        written += (long)lengths[i];
    }
    e->end_writes(db);
    double put = now() - start;
    sync();
    start = now();
    e->begin_reads(db);
    for (size_t i = 0; i < n; i++) {
        long got = e->get(db, keys[i], strlen(keys[i]));
        if (got < 0) fail(name, "a get missed a key it had put");
        read += got;
    }
    e->end_reads(db);
    double get = now() - start;
    e->close(db);
    if (read != written) fail(name, "read other bytes than it wrote");
    char label[64];
    snprintf(label, sizeof label, "%s.put", name);
    emit(label, (long)n, put, written, -1, NULL);
    snprintf(label, sizeof label, "%s.get", name);
    emit(label, (long)n, get, read, -1, NULL);
    remove_tree(directory);
}

// W2 or W3: `count` blobs of `size` bytes from a synth file, keyed by MD5 hex.
static void synth(const struct engine *e, const char *corpus, const char *work, const char *name, const char *file,
                  size_t size, size_t count) {
    size_t length;
    unsigned char *all = load(corpus, file, size * count, &length);
    count = length / size;
    char **keys = calloc(count, sizeof *keys);
    unsigned char **values = calloc(count, sizeof *values);
    size_t *lengths = calloc(count, sizeof *lengths);
    for (size_t i = 0; i < count; i++) {
        keys[i] = malloc(33);
        md5_hex(all + i * size, size, keys[i]);
        values[i] = all + i * size;
        lengths[i] = size;
    }
    put_then_get(e, work, name, keys, values, lengths, count);
    for (size_t i = 0; i < count; i++) free(keys[i]);
    free(keys), free(values), free(lengths), free(all);
}

// W2-mixed, as Benchmarks/Sources/workload/Mixed.swift defines it: 5,000 blobs put untimed, then
// 50,000 timed ops; op n puts the next new blob when n % 10 == 9, else gets a stored one drawn
// by the LCG below (the note is the sum of the drawn indices, the same in every engine).
#define MIXED_PRELOAD 5000
#define MIXED_OPS 50000
static void w2_mixed(const struct engine *e, const char *corpus, const char *work) {
    size_t length, size = 4096, count = 10000;
    unsigned char *all = load(corpus, "synth_4k.bin", size * count, &length);
    char (*keys)[33] = calloc(count, 33);
    for (size_t i = 0; i < count; i++) md5_hex(all + i * size, size, keys[i]);
    char directory[4096];
    fresh(work, "W2mixed", directory, sizeof directory);
    void *db = e->open(directory);
    e->begin_writes(db);
    for (size_t i = 0; i < MIXED_PRELOAD; i++) e->put(db, keys[i], 32, all + i * size, size);
    e->end_writes(db);
    uint64_t state = 0x9E3779B97F4A7C15ull;
    size_t stored = MIXED_PRELOAD;
    long bytes = 0, hits = 0, gets = 0, digest = 0;
    sync();
    double start = now();
    e->begin_writes(db);
    for (long n = 0; n < MIXED_OPS; n++) {
        if (n % 10 == 9) {
            e->put(db, keys[stored], 32, all + stored * size, size);
            stored++;
            bytes += (long)size;
        } else {
            state = state * 6364136223846793005ull + 1442695040888963407ull;
            size_t index = (size_t)((state >> 33) % stored);
            digest += (long)index;
            gets++;
            long got = e->get(db, keys[index], 32);
            if (got >= 0) hits++, bytes += got;
        }
    }
    e->end_writes(db);
    double seconds = now() - start;
    e->close(db);
    char note[64];
    snprintf(note, sizeof note, "sequence %ld", digest);
    emit("W2.mixed", MIXED_OPS, seconds, bytes, (double)hits / (gets ? gets : 1), note);
    remove_tree(directory);
    free(keys), free(all);
}

// W5 without a cap: w5_trace.tsv replayed (the warm-up untimed), no eviction.
static void w5_uncapped(const struct engine *e, const struct manifest *m, const char *corpus, const char *work) {
    size_t length;
    char *text = (char *)load(corpus, "w5_trace.tsv", 0, &length);
    text = realloc(text, length + 1);
    text[length] = 0;
    long warmup = 0, count = 0;
    size_t capacity = length / 3 + 1;
    char *puts_ = malloc(capacity);
    long *rows = malloc(capacity * sizeof *rows);
    for (char *line = text; line && *line;) {
        char *end = strchr(line, '\n');
        if (end) *end = 0;
        if (line[0] == '#') {
            if (strstr(line, "warmup")) {   // "# warmup<TAB>N": the last number on the line
                char *digits = line + strlen(line);
                while (digits > line && digits[-1] >= '0' && digits[-1] <= '9') digits--;
                warmup = strtol(digits, NULL, 10);
            }
        } else if (line[0]) {
            puts_[count] = line[0] == 'P';
            rows[count++] = strtol(line + 2, NULL, 10);
        }
        line = end ? end + 1 : NULL;
    }
    char directory[4096];
    fresh(work, "W5nocap", directory, sizeof directory);
    void *db = e->open(directory);
    long hits = 0, gets = 0, bytes = 0;
    sync();
    double start = now();
    e->begin_writes(db);
    for (long n = 0; n < count; n++) {
        if (n == warmup) {
            e->end_writes(db);
            sync();
            start = now(), hits = gets = bytes = 0;
            e->begin_writes(db);
        }
        const char *path = m->paths[rows[n]];
        if (puts_[n]) {
            e->put(db, path, strlen(path), m->concat + m->offsets[rows[n]], m->sizes[rows[n]]);
            bytes += (long)m->sizes[rows[n]];
        } else {
            gets++;
            long got = e->get(db, path, strlen(path));
            if (got >= 0) hits++, bytes += got;
        }
    }
    e->end_writes(db);
    double seconds = now() - start;
    e->close(db);
    emit("W5.nocap", count - warmup, seconds, bytes, (double)hits / (gets ? gets : 1), NULL);
    remove_tree(directory);
    free(text), free(puts_), free(rows);
}

// Runs the workloads named in a comma-separated list (w1, w2, w2mixed, w3, w5nocap).
static void run_workloads(const struct engine *e, const char *corpus, const char *work, const char *list) {
    printf("{\"engine\": \"%s\", \"results\": [", e->name);
    char *copy = strdup(list);
    for (char *name = strtok(copy, ","); name; name = strtok(NULL, ",")) {
        if (strcmp(name, "w1") == 0 || strcmp(name, "w5nocap") == 0) {
            struct manifest m = load_manifest(corpus);
            if (name[1] == '1') {
                unsigned char **values = calloc(m.count, sizeof *values);
                for (size_t i = 0; i < m.count; i++) values[i] = m.concat + m.offsets[i];
                put_then_get(e, work, "W1", m.paths, values, m.sizes, m.count);
                free(values);
            } else {
                w5_uncapped(e, &m, corpus, work);
            }
            free(m.concat), free(m.text), free(m.paths), free(m.sizes), free(m.offsets);
        } else if (strcmp(name, "w2") == 0) {
            synth(e, corpus, work, "W2", "synth_4k.bin", 4096, 10000);
        } else if (strcmp(name, "w2mixed") == 0) {
            w2_mixed(e, corpus, work);
        } else if (strcmp(name, "w3") == 0) {
            synth(e, corpus, work, "W3", "synth_1m.bin", 1 << 20, 1000);
        } else {
            fail("unknown workload (w1, w2, w2mixed, w3, w5nocap)", name);
        }
    }
    printf("]}\n");
    free(copy);
}


// Arguments shared by both programs: --corpus DIR --work DIR --workloads LIST [--mode MODE].
struct arguments { const char *corpus, *work, *workloads, *mode; };
static struct arguments parse(int argc, char **argv, const char *usage) {
    struct arguments a = {"/tmp/blobcorpus", NULL, "w1,w2,w2mixed,w3,w5nocap", NULL};
    for (int i = 1; i < argc; i++) {
        if (i + 1 < argc && strcmp(argv[i], "--corpus") == 0) a.corpus = argv[++i];
        else if (i + 1 < argc && strcmp(argv[i], "--work") == 0) a.work = argv[++i];
        else if (i + 1 < argc && strcmp(argv[i], "--workloads") == 0) a.workloads = argv[++i];
        else if (i + 1 < argc && strcmp(argv[i], "--mode") == 0) a.mode = argv[++i];
        else { fprintf(stderr, "usage: %s\n", usage); exit(2); }
    }
    if (!a.work) { fprintf(stderr, "usage: %s\n", usage); exit(2); }
    return a;
}
#endif
