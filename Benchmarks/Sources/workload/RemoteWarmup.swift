import BlobCache
import BlobCacheRemote
import Dispatch
import Foundation

// `--workloads warmup --remote URL`: 1,000 values of 64 KiB (synth_64k.bin) warmed up from a
// remote into an empty directory, as a new machine or CI runner does (Benchmarks/remote.py s3
// and redis start the servers and run this beside their plain clients):
//   warmup.put        puts into a cache with the remote, then flushRemote(): every value sent
//   warmup.get.seq    gets from a fresh directory on one thread: every get a remote hit (two
//                     requests: key record, then blob), checked and written back; per-get latency
//   warmup.get.x10    the same on 10 threads (awscli's default of 10 requests at a time)
//   warmup.store.get.seq  the store's own get of the same 2,000 objects, one thread, unchecked
// The objects' names are written to WORK/warmup.objects for the plain clients.

func remoteWarmup(_ options: Options, threads: Int = 10) throws -> [Measurement] {
    let (store, configuration) = try remoteConfiguration(options, workload: "warmup")
    let blobs = try Corpus.blobs(options.corpus + "/synth_64k.bin", size: 64 << 10, count: 1000)
    let keys = blobs.map(md5Hex)
    let bytes = blobs.count * (64 << 10)

    let writer = try BlobCache(directory: freshDirectory(options.work, "warmup-writer"), configuration: configuration)
    let putStart = now()
    for (key, blob) in zip(keys, blobs) { try writer.set(blob, forKey: key) }
    writer.flushRemote()
    let putSeconds = now() - putStart
    precondition(writer.statistics().remote.errors == 0, "warmup: \(writer.statistics().remote)")
    try writer.close()
    var results = [Measurement(workload: "warmup.put", ops: keys.count, seconds: putSeconds, bytes: bytes,
                               note: "local set + write-behind, until flushRemote() returns")]

    // One thread: each get timed.
    let sequential = try BlobCache(directory: freshDirectory(options.work, "warmup-seq"), configuration: configuration)
    var timings = Timings(capacity: keys.count)
    let start = now()
    for key in keys {
        let begin = DispatchTime.now().uptimeNanoseconds
        let value = try sequential.bytes(forKey: key)
        timings.append(begin: begin, end: DispatchTime.now().uptimeNanoseconds)
        precondition(value?.count == 64 << 10)
    }
    let seconds = now() - start
    precondition(sequential.statistics().remote.hits == keys.count, "warmup: \(sequential.statistics().remote)")
    try sequential.close()
    var measured = Measurement(workload: "warmup.get.seq", ops: keys.count, seconds: seconds, bytes: bytes,
                               note: "empty directory, one thread: every get a remote hit (2 requests), checked, written back")
    measured.latency = Latency(timings)
    results.append(measured)

    // `threads` threads, each its share of the keys.
    let parallel = try BlobCache(directory: freshDirectory(options.work, "warmup-x\(threads)"), configuration: configuration)
    let group = DispatchGroup()
    let parallelStart = now()
    for part in 0..<threads {
        group.enter()
        let thread = Thread {
            for index in stride(from: part, to: keys.count, by: threads) {
                precondition((try? parallel.bytes(forKey: keys[index]))??.count == 64 << 10)
            }
            group.leave()
        }
        thread.start()
    }
    group.wait()
    let parallelSeconds = now() - parallelStart
    precondition(parallel.statistics().remote.hits == keys.count, "warmup: \(parallel.statistics().remote)")
    try parallel.close()
    results.append(Measurement(workload: "warmup.get.x\(threads)", ops: keys.count, seconds: parallelSeconds, bytes: bytes,
                               note: "empty directory, \(threads) threads: every get a remote hit (2 requests)"))

    // The store alone, one thread: the same 2,000 requests without checking or writing back.
    let objects = zip(keys, blobs).flatMap { [RemoteObject.key($0.0), RemoteObject.blob(BlobID(hashing: $0.1))] }
    let storeStart = now()
    for object in objects { let found = try store.get(object); precondition(found != nil) }
    results.append(Measurement(workload: "warmup.store.get.seq", ops: objects.count, seconds: now() - storeStart, bytes: bytes,
                               note: "the store's get alone, one thread: 2,000 requests (records and blobs), nothing checked"))

    // What the plain clients fetch: every blob and key record.
    var names: [String] = []
    if let s3 = store as? S3RemoteStore {
        names = zip(keys, blobs).flatMap { [s3.objectKey(of: .key($0.0)), s3.objectKey(of: .blob(BlobID(hashing: $0.1)))] }
    } else if let redis = store as? RedisRemoteStore {
        names = zip(keys, blobs).flatMap { [redis.redisKey(of: .key($0.0)), redis.redisKey(of: .blob(BlobID(hashing: $0.1)))] }
    }
    try names.joined(separator: "\n").write(toFile: options.work + "/warmup.objects", atomically: true, encoding: .utf8)
    return results
}
