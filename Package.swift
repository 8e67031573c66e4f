// swift-tools-version:6.1
import PackageDescription

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
            dependencies: ["BlobCache", "blobcache", "blobcache-crash-writer"]
        ),
    ],
    swiftLanguageModes: [.v6]
)
