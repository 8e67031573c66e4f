import BlobCache
import BlobCacheRemote
import Foundation

// `--workloads remote --remote URL`: W2 and W3 through the remote tier (Benchmarks/remote.sh
// starts nginx on loopback and runs this):
//   W2.remote.put   puts into a cache with the remote, then flushRemote(): every value sent
//   W2.remote.get   gets from a fresh, empty directory with the same remote: every get a remote
//                   hit (two GETs: the key record, then the blob), checked and written back
//   W2.local.get    the same gets again from that directory: local hits, for scale
// Each get phase runs 3 times (a fresh directory each), the median is reported. The blob
// files' paths are written to WORK/W2.paths for wrk to GET from nginx directly.

func remoteTier(_ options: Options, rounds: Int = 3) throws -> [Measurement] {
    let (store, configuration) = try remoteConfiguration(options, workload: "remote")
    var results: [Measurement] = []
    for (name, file, size, count) in [("W2", "synth_4k.bin", 4096, 10_000), ("W3", "synth_1m.bin", 1 << 20, 1000)] {
        let blobs = try Corpus.blobs(options.corpus + "/" + file, size: size, count: count)
        let keys = blobs.map(md5Hex)
        let bytes = size * count

        let writer = try BlobCache(directory: freshDirectory(options.work, "\(name)-writer"), configuration: configuration)
        let putStart = now()
        for (key, blob) in zip(keys, blobs) { try writer.set(blob, forKey: key) }
        writer.flushRemote()
        let putSeconds = now() - putStart
        precondition(writer.statistics().remote.writes == count, "\(name): \(writer.statistics().remote)")
        try writer.close()
        results.append(Measurement(workload: "\(name).remote.put", ops: count, seconds: putSeconds, bytes: bytes,
                                   note: "local set + write-behind, until flushRemote() returns"))

        var remoteSamples: [Double] = [], localSamples: [Double] = []
        for round in 0..<rounds {
            let reader = try BlobCache(directory: freshDirectory(options.work, "\(name)-reader-\(round)"), configuration: configuration)
            var read = 0
            let start = now()
            for key in keys { read += try reader.bytes(forKey: key)!.count }
            remoteSamples.append(now() - start)
            precondition(read == bytes && reader.statistics().remote.hits == count, "\(name): \(reader.statistics().remote)")
            reader.purgeMemory()
            let again = now()
            for key in keys { read += try reader.bytes(forKey: key)!.count }
            localSamples.append(now() - again)
            precondition(reader.statistics().remote.hits == count)
            try reader.close()
        }
        results.append(Measurement(workload: "\(name).remote.get", ops: count, seconds: median(remoteSamples), bytes: bytes,
                                   note: "cold local cache: every get a remote hit, median of \(rounds)"))
        results.append(Measurement(workload: "\(name).local.get", ops: count, seconds: median(localSamples), bytes: bytes,
                                   note: "the same gets once written back, memory tier purged, median of \(rounds)"))

        // The same blob files, for wrk against nginx.
        if let http = store as? HTTPRemoteStore {
            let paths = blobs.map { URL(string: http.url(of: .blob(BlobID(hashing: $0))))!.path }
            try paths.joined(separator: "\n").write(toFile: options.work + "/\(name).paths", atomically: true, encoding: .utf8)
        }
    }
    return results
}

/// The store `--remote` names, and a configuration using it whose write-behind queue holds a
/// whole workload (nothing dropped while it is measured).
func remoteConfiguration(_ options: Options, workload: String) throws -> (any RemoteStore, BlobCache.Configuration) {
    guard let url = options.remote else { throw WorkloadError.usage("--workloads \(workload) needs --remote URL") }
    let store = try RemoteStores.store(url: url, timeout: .seconds(10))
    var configuration = BlobCache.Configuration()
    configuration.remote = store
    configuration.remoteQueueLimit = 2 << 30
    return (store, configuration)
}
