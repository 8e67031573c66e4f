// swift-tools-version:6.2
// libFuzzer targets for BlobCache's parsers: one executable per parser, each
// a thin entry point into `FuzzTarget` (Sources/BlobCache/Fuzzing). Its own package, so that
// neither users of the library nor the main build ever compile them; build and run them with
// Tools/fuzz.sh, which passes the sanitizer flags (`-sanitize=fuzzer,address`, `-enable-testing`)
// and sets BLOBCACHE_TESTING, without which a release build of BlobCache has no `FuzzTarget`.
import PackageDescription

let targets = ["FuzzJournal", "FuzzPackRecord", "FuzzLooseBlob", "FuzzSnapshot", "FuzzConfig", "FuzzStats", "FuzzSize"]

let package = Package(
    name: "BlobCacheFuzz",
    platforms: [.macOS(.v15)],
    products: targets.map { .executable(name: $0, targets: [$0]) },
    dependencies: [.package(name: "BlobCache", path: "../..")],
    targets: targets.map { name in
        .executableTarget(name: name, dependencies: [.product(name: "BlobCache", package: "BlobCache")], path: "Targets/" + name)
    },
    swiftLanguageModes: [.v6]
)
