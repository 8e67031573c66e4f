// RocksDB (its C API, rocksdb/c.h) under the workloads of bench_common.h, in one of two modes:
//
//   --mode default  rocksdb_options_create() with create_if_missing and nothing else changed
//                   (the library's defaults: 64 MiB memtable, block cache, Snappy-compressed
//                   SST blocks where the library has Snappy, background flush and compaction).
//   --mode blob     the same plus BlobDB: enable_blob_files, min_blob_size 4096, so that values
//                   of 4 KiB and more (all of W2's and W3's, W1's larger files) are written once
//                   to blob files and the LSM tree holds only references to them.
//
// Both write with the default write options: the WAL on and sync = false. A put is in the WAL
// (written to the page cache) when it returns, so it survives a crash of the process; without
// fsync an OS crash or power loss can lose the last writes. Each put and each get is its own
// call (no WriteBatch); a get returns a copy of the value (rocksdb_get mallocs it), freed here.
//
//   cc -O2 Benchmarks/native/rocksdb_bench.c -o /tmp/rocksdb_bench -lrocksdb -lcrypto
//   /tmp/rocksdb_bench --work /tmp/rocksdb-work --mode default [--corpus DIR] [--workloads w1,w2,w2mixed,w3,w5nocap]
#include "bench_common.h"
#include <rocksdb/c.h>

struct rocks {
    rocksdb_t *db;
    rocksdb_options_t *options;
    rocksdb_writeoptions_t *write;
    rocksdb_readoptions_t *read;
};

static int blob_mode;

static void check(char *error, const char *what) {
    if (error) fail(what, error);
}

static void *rocks_open(const char *directory) {
    struct rocks *r = calloc(1, sizeof *r);
    r->options = rocksdb_options_create();
    rocksdb_options_set_create_if_missing(r->options, 1);
    if (blob_mode) {
        rocksdb_options_set_enable_blob_files(r->options, 1);
        rocksdb_options_set_min_blob_size(r->options, 4096);
    }
    char *error = NULL;
    r->db = rocksdb_open(r->options, directory, &error);
    check(error, "rocksdb_open");
    r->write = rocksdb_writeoptions_create();   // sync = false, WAL on: the defaults
    r->read = rocksdb_readoptions_create();
    return r;
}

static void rocks_put(void *handle, const char *key, size_t key_length, const void *value, size_t length) {
    struct rocks *r = handle;
    char *error = NULL;
    rocksdb_put(r->db, r->write, key, key_length, value, length, &error);
    check(error, "rocksdb_put");
}

static long rocks_get(void *handle, const char *key, size_t key_length) {
    struct rocks *r = handle;
    char *error = NULL;
    size_t length = 0;
    char *value = rocksdb_get(r->db, r->read, key, key_length, &length, &error);
    check(error, "rocksdb_get");
    if (!value) return -1;
    rocksdb_free(value);
    return (long)length;
}

static void rocks_none(void *handle) { (void)handle; }

static void rocks_close(void *handle) {
    struct rocks *r = handle;
    rocksdb_close(r->db);
    rocksdb_writeoptions_destroy(r->write);
    rocksdb_readoptions_destroy(r->read);
    rocksdb_options_destroy(r->options);
    free(r);
}

int main(int argc, char **argv) {
    struct arguments a = parse(argc, argv, "rocksdb_bench --work DIR --mode default|blob [--corpus DIR] [--workloads LIST]");
    if (!a.mode || (strcmp(a.mode, "default") && strcmp(a.mode, "blob"))) fail("rocksdb_bench", "--mode default or --mode blob");
    blob_mode = strcmp(a.mode, "blob") == 0;
    struct engine e = {blob_mode ? "rocksdb-blob" : "rocksdb", rocks_open, rocks_put, rocks_get, rocks_none, rocks_none,
                       rocks_none, rocks_none, rocks_close};
    run_workloads(&e, a.corpus, a.work, a.workloads);
    return 0;
}
