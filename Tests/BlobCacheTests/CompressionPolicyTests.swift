import Testing
@testable import BlobCache

/// `Configuration.compression`: a codec, and the size from which values are stored raw.
@Suite("Compression policy")
struct CompressionPolicyTests {
    @Test("fastReads stores values from 256 KiB raw and smaller ones with LZ4; balanced compresses both; all read back",
          arguments: [CompressionPolicy.balanced, .fastReads, .smallest, .off])
    func presets(policy: CompressionPolicy) throws {
        let dir = TemporaryDirectory()
        let cache = try BlobCache(directory: dir.path, configuration: .testing { $0.compression = policy })
        let sizes = ["small": 2_000, "medium": 100_000, "below": (256 << 10) - 1, "at": 256 << 10, "large": 1 << 20]
        for (key, size) in sizes { try cache.set(Samples.compressible(size, seed: UInt64(size)), forKey: key) }
        let expectedCodecs: [CompressionPolicy: (below256KiB: String, from256KiB: String)] = [
            .balanced: ("lz4", "lz4"), .fastReads: ("lz4", "none"), .smallest: ("zlib", "zlib"), .off: ("none", "none"),
        ]
        for (key, size) in sizes {
            let codec = try #require(try cache.entry(forKey: key)).codec
            let expected = size < 256 << 10 ? expectedCodecs[policy]!.below256KiB : expectedCodecs[policy]!.from256KiB
            #expect(codec == expected, "\(key), \(size) bytes, under \(policy)")
            #expect(same(try cache.bytes(forKey: key), Samples.compressible(size, seed: UInt64(size))))
        }
        try cache.close()
        #expect(try BlobCache.check(directory: dir.path).errors.isEmpty)
    }

    @Test("the size at which values are stored raw is the policy's own, however small; packed values too")
    func customThreshold() throws {
        let dir = TemporaryDirectory()
        let policy = CompressionPolicy(codec: .zlib(level: 1), storingRawFrom: 1000)
        let cache = try BlobCache(directory: dir.path, configuration: .testing { $0.compression = policy })
        try cache.set(Samples.compressible(999), forKey: "below")
        try cache.set(Samples.compressible(1000, seed: 2), forKey: "at")
        #expect(try cache.entry(forKey: "below")?.codec == "zlib")
        #expect(try cache.entry(forKey: "at")?.codec == "none")
        guard case .packed? = try cache.entry(forKey: "at")?.place else {
            Issue.record("a 1000-byte value is packed")
            return
        }
        #expect(same(try cache.bytes(forKey: "at"), Samples.compressible(1000, seed: 2)))
        #expect(policy.description == "zlib-1, raw from 1000 bytes")
        #expect(CompressionPolicy.fastReads.description == "fastReads")
    }

    @Test("compact(recompressingTo:) follows the open's raw size: a balanced cache reopened with fastReads ends with its large values raw")
    func recompressByPolicy() throws {
        let dir = TemporaryDirectory()
        let values = ["small": Samples.compressible(5_000), "large": Samples.compressible(400_000, seed: 2)]
        let balanced = try BlobCache(directory: dir.path, configuration: .testing { $0.compression = .balanced })
        for (key, value) in values { try balanced.set(value, forKey: key) }
        #expect(try balanced.compact(recompressingTo: .lz4).blobsRecompressed == 0, "nothing to do under the same policy")
        try balanced.close()
        let fast = try BlobCache(directory: dir.path, configuration: .testing { $0.compression = .fastReads })
        #expect(try fast.entry(forKey: "large")?.codec == "lz4", "stored as it was until recompressed")
        #expect(try fast.compact(recompressingTo: .lz4).blobsRecompressed == 1)
        #expect(try fast.entry(forKey: "large")?.codec == "none")
        #expect(try fast.entry(forKey: "small")?.codec == "lz4")
        for (key, value) in values { #expect(same(try fast.bytes(forKey: key), value)) }
        try fast.close()
        #expect(try BlobCache.check(directory: dir.path).errors.isEmpty)
    }

    @Test("codec is compression's codec: setting one sets the other, and the raw size stays")
    func codecIsCompressionsCodec() {
        var configuration = BlobCache.Configuration()
        #expect(configuration.compression == .adaptive && configuration.codec == .lz4)
        configuration.compression = .fastReads
        configuration.codec = .zlib(level: 3)
        #expect(configuration.compression == CompressionPolicy(codec: .zlib(level: 3), storingRawFrom: 256 << 10))
    }

    @Test("a negative raw size is refused with invalidConfiguration, and nothing is opened")
    func negativeSize() {
        let dir = TemporaryDirectory()
        #expect {
            _ = try BlobCache(directory: dir.path, configuration: .testing {
                $0.compression = CompressionPolicy(codec: .lz4, storingRawFrom: -1)
            })
        } throws: { error in
            guard case BlobCacheError.invalidConfiguration(let reason) = error else { return false }
            return reason.contains("storingRawFrom")
        }
    }
}
