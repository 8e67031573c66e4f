import BlobCache
import Foundation

/// What a workload needs of a cache: the same calls for BlobCache and the raw baseline.
protocol Engine {
    func put(_ value: UnsafeRawBufferPointer, key: String) throws
    func get(_ key: String) throws -> Int?   // bytes read, nil on a miss
    func close() throws
    /// Bytes on disk of the values stored, where the engine knows them.
    var storedBytes: Int? { get }
}

extension Engine {
    var storedBytes: Int? { nil }
}

/// BlobCache as a library user would use it.
final class BlobCacheEngine: Engine {
    let cache: BlobCache
    init(directory: String, maxBytes: Int?, compression: CompressionPolicy, packThreshold: Int?, memoryLimit: Int? = nil,
         encryption: BlobCache.Encryption? = nil, eviction: EvictionPolicy? = nil) throws {
        var configuration = BlobCache.Configuration()
        if let eviction { configuration.eviction = eviction }
        configuration.encryption = encryption
        if let memoryLimit { configuration.memoryLimit = memoryLimit }
        configuration.maxStoredBytes = maxBytes
        configuration.compression = compression
        if let packThreshold { configuration.packThreshold = packThreshold }
        cache = try BlobCache(directory: directory, configuration: configuration)
    }
    func put(_ value: UnsafeRawBufferPointer, key: String) throws { try cache.set(value, forKey: key) }
    func get(_ key: String) throws -> Int? { try cache.bytes(forKey: key)?.count }
    func close() throws { try cache.close() }
    var storedBytes: Int? { try? cache.totals().storedBytes }
}

/// The raw-filesystem baseline: each value written to a temporary file and renamed into a
/// two-level sharded tree named by the key; a get opens and reads the file. No hashing of
/// content, no compression, no index.
final class RawFilesystemEngine: Engine {
    let root: String
    init(directory: String) throws {
        root = directory
        for a in 0..<16 {
            for b in 0..<16 {
                try FileManager.default.createDirectory(atPath: "\(root)/\(Self.hex[a])/\(Self.hex[b])", withIntermediateDirectories: true)
            }
        }
    }
    static let hex = Array("0123456789abcdef")
    private var counter = 0

    /// A file name for the key: FNV-1a of the key picks the shard; the key is hex-encoded
    /// (with a table, so the baseline pays nothing a real one would not).
    private func path(_ key: String) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        var name = [UInt8]()
        name.reserveCapacity(2 * key.utf8.count)
        for byte in key.utf8 {
            hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3
            name.append(Self.digits[Int(byte >> 4)])
            name.append(Self.digits[Int(byte & 15)])
        }
        return "\(root)/\(Self.hex[Int(hash & 15)])/\(Self.hex[Int(hash >> 4 & 15)])/\(String(decoding: name.prefix(200), as: UTF8.self))"
    }
    static let digits = Array("0123456789abcdef".utf8)

    func put(_ value: UnsafeRawBufferPointer, key: String) throws {
        let final = path(key)
        counter += 1
        let temporary = final + ".tmp\(counter)"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw POSIXError(.EIO) }
        var written = 0
        while written < value.count {
            let n = write(fd, value.baseAddress! + written, value.count - written)
            guard n > 0 else { Glibc.close(fd); throw POSIXError(.EIO) }
            written += n
        }
        Glibc.close(fd)
        guard rename(temporary, final) == 0 else { throw POSIXError(.EIO) }
    }

    func get(_ key: String) throws -> Int? {
        let fd = open(path(key), O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { Glibc.close(fd) }
        var info = stat()
        fstat(fd, &info)
        var buffer = [UInt8](repeating: 0, count: Int(info.st_size))
        let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        return n
    }

    func close() throws {}
}

/// MD5 hex, for keys the workloads define as "MD5 hex of the blob".
func md5Hex(_ bytes: [UInt8]) -> String { BlobID(hashing: bytes).hex }
