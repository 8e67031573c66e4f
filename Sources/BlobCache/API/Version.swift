extension BlobCache {
    /// This release's version (semantic versioning), as `blobcache --version` prints it. The
    /// on-disk formats each carry their own version (docs/FORMAT.md).
    ///
    ///     print("BlobCache \(BlobCache.version)")
    public static let version = "0.9.0"
}
