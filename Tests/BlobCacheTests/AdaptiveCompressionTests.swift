import SystemPackage
import Testing
@testable import BlobCache

/// `CompressionPolicy.minimumSaving` and the `.adaptive` default: a value its codec shrinks by
/// less than the policy's minimum saving is stored raw.
@Suite("Adaptive compression")
struct AdaptiveCompressionTests {
    /// `count` bytes of which each KiB starts with `randomPerKiB` random bytes and ends in zeros:
    /// LZ4 saves a little less than `1 - randomPerKiB / 1024` of them (960: about 5%, 768:
    /// about 24%, 512: about 49%, 128: about 87%).
    static func partlyRandom(_ count: Int, randomPerKiB: Int, seed: UInt64 = 1) -> [UInt8] {
        let random = Samples.random(count, seed: seed)
        return (0..<count).map { $0 % 1024 < randomPerKiB ? random[$0] : 0 }
    }

    @Test("the decision: stored compressed when the saving is at least the minimum for the value's size")
    func decision() {
        let adaptive = CompressionPolicy.adaptive
        #expect(adaptive.minimumSaving(forValueOf: CompressionPolicy.largeValueSize - 1) == 0.125)
        #expect(adaptive.minimumSaving(forValueOf: CompressionPolicy.largeValueSize) == 0.75)
        #expect(!adaptive.storesCompressed(3_700, ofValueOf: 4_096), "saves 9.7%, under an eighth")
        #expect(adaptive.storesCompressed(3_584, ofValueOf: 4_096), "saves exactly an eighth")
        #expect(!adaptive.storesCompressed(600_000, ofValueOf: 1 << 20), "a large value saving 43%")
        #expect(!adaptive.storesCompressed(262_145, ofValueOf: 1 << 20), "a large value one byte short of 75%")
        #expect(adaptive.storesCompressed(262_144, ofValueOf: 1 << 20), "a large value saving exactly 75%")
        #expect(CompressionPolicy.balanced.storesCompressed(4_095, ofValueOf: 4_096))
        #expect(!CompressionPolicy.balanced.storesCompressed(4_096, ofValueOf: 4_096), "not smaller: raw, as always")
        let never = CompressionPolicy(codec: .lz4, minimumSaving: .nan)
        #expect(!never.storesCompressed(1, ofValueOf: 4_096))
        #expect(!CompressionPolicy(codec: .lz4, minimumSaving: 1).storesCompressed(1, ofValueOf: 4_096))
    }

    @Test("adaptive is the default, a preset of its own beside the others, and described by name")
    func presetAndDefault() {
        #expect(BlobCache.Configuration().compression == .adaptive)
        #expect(BlobCache.Configuration().codec == .lz4)
        #expect(Set([CompressionPolicy.adaptive, .balanced, .fastReads, .smallest, .off]).count == 5)
        #expect(CompressionPolicy(codec: .lz4, minimumSaving: 1.0 / 8, largeMinimumSaving: 3.0 / 4) == .adaptive)
        #expect(CompressionPolicy(codec: .lz4) == .balanced, "no minimum saving: today's balanced")
        #expect(CompressionPolicy.adaptive.description == "adaptive")
        #expect(CompressionPolicy(codec: .lz4, minimumSaving: 0.1, largeMinimumSaving: 0.5).description
                == "lz4, saving at least 10%, 50% from 262144 bytes")
        #expect(CompressionPolicy(codec: .zlib(level: 1), storingRawFrom: 1000, minimumSaving: 0.125).description
                == "zlib-1, raw from 1000 bytes, saving at least 12.5%")
        var configuration = BlobCache.Configuration()
        configuration.codec = .zlib(level: 6)
        #expect(configuration.compression.minimumSaving == 0.125, "setting the codec keeps the savings")
    }

    @Test("through the cache: under the default, what saves too little is stored raw, the rest with LZ4; balanced compresses all")
    func storedCodecs() throws {
        let values: [String: [UInt8]] = [
            "small, saves 5%": Self.partlyRandom(16_384, randomPerKiB: 960),
            "small, saves 24%": Self.partlyRandom(16_384, randomPerKiB: 768, seed: 2),
            "large, saves 49%": Self.partlyRandom(1 << 20, randomPerKiB: 512, seed: 3),
            "large, saves 87%": Self.partlyRandom(1 << 20, randomPerKiB: 128, seed: 4),
        ]
        let underDefault = ["small, saves 5%": "none", "small, saves 24%": "lz4", "large, saves 49%": "none",
                            "large, saves 87%": "lz4"]
        for (policy, expected) in [(nil, underDefault), (CompressionPolicy.balanced, underDefault.mapValues { _ in "lz4" })] {
            let dir = TemporaryDirectory()
            let cache = try BlobCache(directory: dir.path, configuration: .testing { if let policy { $0.compression = policy } })
            for (key, value) in values { try cache.set(value, forKey: key) }
            for (key, value) in values {
                let entry = try #require(try cache.entry(forKey: key))
                #expect(entry.codec == expected[key], "\(key) under \(policy.map { "\($0)" } ?? "the default")")
                #expect(same(try cache.bytes(forKey: key), value))
            }
            try cache.close()
            #expect(try BlobCache.check(directory: dir.path).errors.isEmpty)
        }
    }

    @Test("a 1 MiB value saving half is stored at its full size under the default, at about half under balanced")
    func storedBytes() throws {
        let value = Self.partlyRandom(1 << 20, randomPerKiB: 512)
        var stored: [String: Int] = [:]
        for (name, policy) in [("default", BlobCache.Configuration().compression), ("balanced", .balanced)] {
            let dir = TemporaryDirectory()
            let cache = try BlobCache(directory: dir.path, configuration: .testing { $0.compression = policy })
            try cache.set(value, forKey: "v")
            stored[name] = try cache.totals().storedBytes
            #expect(same(try cache.bytes(forKey: "v"), value))
            try cache.close()
        }
        #expect(try #require(stored["default"]) >= 1 << 20)
        #expect(try #require(stored["balanced"]) < (1 << 20) * 6 / 10)
    }

    @Test("compact(recompressingTo: .lz4) keeps the open's thresholds: a large value saving half stays raw")
    func recompressKeepsThresholds() throws {
        let dir = TemporaryDirectory()
        let cache = try BlobCache(directory: dir.path, configuration: .testing())
        try cache.set(Self.partlyRandom(1 << 20, randomPerKiB: 512), forKey: "large")
        try cache.set(Self.partlyRandom(8 << 10, randomPerKiB: 512), forKey: "small")
        let before = try cache.totals().storedBytes
        _ = try cache.compact(recompressingTo: .lz4)
        #expect(try cache.entry(forKey: "large")?.codec == "none")
        #expect(try cache.totals().storedBytes == before)
        #expect(same(try cache.bytes(forKey: "large"), Self.partlyRandom(1 << 20, randomPerKiB: 512)))
    }

    @Test("a streamed (pieced) value: pieces that save too little are stored raw under the default")
    func streamedPieces() throws {
        let halves = Self.partlyRandom(3 << 20, randomPerKiB: 512, seed: 5)
        let tenths = Self.partlyRandom(3 << 20, randomPerKiB: 64, seed: 6)
        let dir = TemporaryDirectory()
        let cache = try BlobCache(directory: dir.path, configuration: .testing())
        _ = try streamIn(cache, halves, forKey: "halves", in: dir)
        let raw = try cache.totals().storedBytes
        #expect(raw >= 3 << 20, "pieces saving about half are stored raw")
        _ = try streamIn(cache, tenths, forKey: "tenths", in: dir)
        #expect(try cache.totals().storedBytes - raw < (3 << 20) / 5, "pieces saving about 93% stay compressed")
        #expect(streamOut(cache, forKey: "halves").bytes == halves)
        #expect(streamOut(cache, forKey: "tenths").bytes == tenths)
        try cache.close()
        #expect(try BlobCache.check(directory: dir.path).errors.isEmpty)
    }
}
