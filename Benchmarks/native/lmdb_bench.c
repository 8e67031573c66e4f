// LMDB (liblmdb) under the workloads of bench_common.h, in one of two modes:
//
//   --mode txn    one write transaction per put, one read transaction per get: what a cache
//                 serving independent calls must do. Each put is committed when it returns
//                 (visible to every reader, kept if the process crashes: its pages reached the
//                 page cache), like BlobCache's default (journal written, no fsync per call).
//   --mode batch  all the puts of a phase in one write transaction, all its gets in one read
//                 transaction: LMDB's best case; nothing of a batch is committed before its end.
//
// Both open the environment with MDB_NOSYNC: no fsync at commit, so an OS crash or power loss
// can lose the last commits (and, as lmdb.h says, corrupt the file where the file system does
// not keep the order of writes). A get copies the value out before its transaction ends (the
// pointer LMDB returns is valid only inside it).
//
//   cc -O2 Benchmarks/native/lmdb_bench.c -o /tmp/lmdb_bench -llmdb -lcrypto
//   /tmp/lmdb_bench --work /tmp/lmdb-work --mode txn [--corpus DIR] [--workloads w1,w2,w2mixed,w3,w5nocap]
#include "bench_common.h"
#include <lmdb.h>

struct lmdb {
    MDB_env *env;
    MDB_dbi dbi;
    MDB_txn *write;   // the open write transaction of a batch, else NULL
    MDB_txn *read;    // a read transaction, reset between gets (txn mode) or held (batch)
    int batch;
    int reading;      // a batch's read transaction is open
};

static int batch_mode;

static void check(int rc, const char *what) {
    if (rc != 0) fail(what, mdb_strerror(rc));
}

static void *lmdb_open(const char *directory) {
    struct lmdb *db = calloc(1, sizeof *db);
    db->batch = batch_mode;
    check(mdb_env_create(&db->env), "mdb_env_create");
    check(mdb_env_set_mapsize(db->env, (size_t)16 << 30), "mdb_env_set_mapsize");   // W3 holds 1 GiB
    check(mdb_env_open(db->env, directory, MDB_NOSYNC | MDB_NOTLS, 0644), "mdb_env_open");
    MDB_txn *txn;
    check(mdb_txn_begin(db->env, NULL, 0, &txn), "mdb_txn_begin");
    check(mdb_dbi_open(txn, NULL, 0, &db->dbi), "mdb_dbi_open");
    check(mdb_txn_commit(txn), "mdb_txn_commit");
    // The read handle is reset after each get and renewed before the next (LMDB's way of
    // repeating read transactions): one snapshot per get, without a new handle each time.
    check(mdb_txn_begin(db->env, NULL, MDB_RDONLY, &db->read), "mdb_txn_begin(read)");
    mdb_txn_reset(db->read);
    return db;
}

static void lmdb_put(void *handle, const char *key, size_t key_length, const void *value, size_t length) {
    struct lmdb *db = handle;
    MDB_val k = {key_length, (void *)key}, v = {length, (void *)value};
    if (db->write) {
        check(mdb_put(db->write, db->dbi, &k, &v, 0), "mdb_put");
        return;
    }
    MDB_txn *txn;
    check(mdb_txn_begin(db->env, NULL, 0, &txn), "mdb_txn_begin");
    check(mdb_put(txn, db->dbi, &k, &v, 0), "mdb_put");
    check(mdb_txn_commit(txn), "mdb_txn_commit");
}

static long copy_out(const MDB_val *v) {
    void *copy = malloc(v->mv_size ? v->mv_size : 1);
    memcpy(copy, v->mv_data, v->mv_size);
    __asm__ volatile("" : : "r"(copy) : "memory");   // the copy is made, as a caller would use it
    free(copy);
    return (long)v->mv_size;
}

static long lmdb_get(void *handle, const char *key, size_t key_length) {
    struct lmdb *db = handle;
    MDB_val k = {key_length, (void *)key}, v;
    if (db->write) {   // a batch's gets (W2-mixed, W5) read inside its write transaction
        int rc = mdb_get(db->write, db->dbi, &k, &v);
        if (rc == MDB_NOTFOUND) return -1;
        check(rc, "mdb_get");
        return copy_out(&v);
    }
    if (!db->reading) check(mdb_txn_renew(db->read), "mdb_txn_renew");
    int rc = mdb_get(db->read, db->dbi, &k, &v);
    long length = rc == MDB_NOTFOUND ? -1 : (check(rc, "mdb_get"), copy_out(&v));
    if (!db->reading) mdb_txn_reset(db->read);
    return length;
}

static void lmdb_begin_writes(void *handle) {
    struct lmdb *db = handle;
    if (db->batch) check(mdb_txn_begin(db->env, NULL, 0, &db->write), "mdb_txn_begin(batch)");
}

static void lmdb_end_writes(void *handle) {
    struct lmdb *db = handle;
    if (db->write) check(mdb_txn_commit(db->write), "mdb_txn_commit(batch)");
    db->write = NULL;
}

static void lmdb_begin_reads(void *handle) {
    struct lmdb *db = handle;
    if (db->batch) check(mdb_txn_renew(db->read), "mdb_txn_renew(batch)"), db->reading = 1;
}

static void lmdb_end_reads(void *handle) {
    struct lmdb *db = handle;
    if (db->reading) mdb_txn_reset(db->read);
    db->reading = 0;
}

static void lmdb_close(void *handle) {
    struct lmdb *db = handle;
    mdb_txn_abort(db->read);
    mdb_env_close(db->env);
    free(db);
}

int main(int argc, char **argv) {
    struct arguments a = parse(argc, argv, "lmdb_bench --work DIR --mode txn|batch [--corpus DIR] [--workloads LIST]");
    if (!a.mode || (strcmp(a.mode, "txn") && strcmp(a.mode, "batch"))) fail("lmdb_bench", "--mode txn or --mode batch");
    batch_mode = strcmp(a.mode, "batch") == 0;
    struct engine e = {batch_mode ? "lmdb-batch" : "lmdb", lmdb_open, lmdb_put, lmdb_get, lmdb_begin_writes,
                       lmdb_end_writes, lmdb_begin_reads, lmdb_end_reads, lmdb_close};
    run_workloads(&e, a.corpus, a.work, a.workloads);
    return 0;
}
