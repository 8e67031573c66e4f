// swift-tools-version:6.1
import PackageDescription
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

let package = Package(
    name: "BlobCache",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "BlobCache", targets: ["BlobCache"]),
        .executable(name: "blobcache", targets: ["blobcache"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-crypto.git", "3.12.3"..<"5.0.0"),
        .package(url: "https://github.com/apple/swift-system.git", from: "1.4.0"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.6.0"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.5.0"),
    ],
    targets: [
        .systemLibrary(
            name: "CLZ4",
            pkgConfig: "liblz4",
            providers: [.apt(["liblz4-dev"]), .brew(["lz4"])]
        ),
        .systemLibrary(
            name: "CZlib",
            pkgConfig: "zlib",
            providers: [.apt(["zlib1g-dev"]), .brew(["zlib"])]
        ),
        .target(
            name: "BlobCache",
            dependencies: [
                "CLZ4",
                "CZlib",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "SystemPackage", package: "swift-system"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
            ]
        ),
        .executableTarget(
            name: "blobcache",
            dependencies: [
                "BlobCache",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            path: "Tools/blobcache"
        ),
        // A tiny writer the crash tests start as a child process and kill with SIGKILL.
        .executableTarget(
            name: "blobcache-crash-writer",
            dependencies: ["BlobCache"],
            path: "Tests/CrashWriter"
        ),
        .testTarget(
            name: "BlobCacheTests",
            dependencies: [
                "BlobCache", "blobcache", "blobcache-crash-writer",
                .product(name: "MetricsTestKit", package: "swift-metrics"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)

// The DocC plugin only for building the documentation (Tools/docs.sh sets BLOBCACHE_DOCS=1), so
// that packages depending on BlobCache never resolve it.
if ProcessInfo.processInfo.environment["BLOBCACHE_DOCS"] != nil {
    package.dependencies.append(.package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.4.0"))
}
