import BlobCache
import Foundation

/// The measurements behind the store's defaults (docs/FORMAT.md): put throughput of loose files
/// against pack records at 4 KiB, 64 KiB and 1 MiB, and of the shard widths (one hex digit per
/// level, 256 leaf directories, against two, 65,536) for loose files.
func placement(_ options: Options) throws -> [Measurement] {
    var results: [Measurement] = []
    let cases: [(String, String, Int, Int)] = [("4KiB", "synth_4k.bin", 4096, 10_000),
                                               ("64KiB", "synth_64k.bin", 65_536, 2000),
                                               ("1MiB", "synth_1m.bin", 1 << 20, 300)]
    for (label, file, size, count) in cases {
        let blobs = try Corpus.blobs(options.corpus + "/" + file, size: size, count: count)
        let keys = blobs.map(md5Hex)
        for (placement, threshold) in [("loose", 0), ("packed", 4 * size)] {
            var configuration = BlobCache.Configuration()
            configuration.packThreshold = threshold
            configuration.compression = options.policy
            let cache = try BlobCache(directory: freshDirectory(options.work, "placement-\(label)-\(placement)"),
                                      configuration: configuration)
            let start = now()
            for (key, blob) in zip(keys, blobs) { try cache.set(blob, forKey: key) }
            let seconds = now() - start
            try cache.close()
            results.append(Measurement(workload: "put.\(label).\(placement)", ops: count, seconds: seconds, bytes: size * count))
        }
    }
    // Shard widths: temp file + rename of 10,000 × 4 KiB into objects/<w hex>/<w hex>/<id>,
    // directories made on demand, as the loose store does.
    let blobs = try Corpus.blobs(options.corpus + "/synth_4k.bin", size: 4096, count: 10_000)
    let names = blobs.map(md5Hex)
    for width in [1, 2] {
        let root = freshDirectory(options.work, "shards-\(width)")
        let start = now()
        for (name, blob) in zip(names, blobs) {
            let first = root + "/" + name.prefix(width), second = first + "/" + name.dropFirst(width).prefix(width)
            if access(second, F_OK) != 0 {
                mkdir(first, 0o755)
                mkdir(second, 0o755)
            }
            let temporary = second + "/tmp." + name
            let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
            _ = blob.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            Glibc.close(fd)
            rename(temporary, second + "/" + name)
        }
        let seconds = now() - start
        results.append(Measurement(workload: "shards.\(width)hex", ops: names.count, seconds: seconds, bytes: 4096 * names.count))
    }
    return results
}
