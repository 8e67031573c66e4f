// swift-tools-version:6.2
// The benchmarks: a package of their own, so that users of the library never resolve
// benchmark dependencies. Micro-benchmarks run with `swift package benchmark`; the workload
// runner (W1–W5) with `swift run -c release workload`; compare.py runs the side-by-side comparison.
import PackageDescription

let package = Package(
    name: "BlobCacheBenchmarks",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "BlobCache", path: ".."),
        .package(url: "https://github.com/ordo-one/benchmark.git", from: "1.38.1", traits: ["MallocInterposer"]),
        .package(url: "https://github.com/apple/swift-crypto.git", "3.12.3"..<"5.0.0"),
    ],
    targets: [
        .executableTarget(
            name: "BlobCacheBenchmarks",
            dependencies: [
                .product(name: "BlobCache", package: "BlobCache"),
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            path: "Benchmarks/BlobCacheBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        .executableTarget(
            name: "workload",
            dependencies: [
                .product(name: "BlobCache", package: "BlobCache"),
                .product(name: "BlobCacheRemote", package: "BlobCache"),
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            path: "Sources/workload"
        ),
    ],
    swiftLanguageModes: [.v6]
)
