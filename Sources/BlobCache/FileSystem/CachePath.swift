import SystemPackage

/// A path the cache uses under its directory: the directory's path, normalised once when the
/// cache is opened, and names joined to it with `/`. The file-system seam (`FileSystem`) takes
/// these.
///
///     let files = CacheFiles(root: CachePath(normalizing: "/var/cache/app/"))
///     files.packs.appending("000001.pack")   // /var/cache/app/packs/000001.pack
///
/// Not `FilePath`: a `FilePath` is parsed and checked character by character each time one is
/// made or extended. That is cheap in an optimised build, but in a debug build it cost more
/// than the system calls around it: half the time of the fault-injection tests. Every name
/// joined here is one the cache chose or one a directory listing returned, so it holds no `/`
/// and nothing needs normalising after the root.
struct CachePath: Hashable, Sendable, CustomStringConvertible {
    /// The path as text, as the system is handed it.
    let string: String

    /// A path taken as it is: `text` must already be normal (no `//`, no trailing `/`).
    init(_ text: String) {
        assert(!text.contains("//") && (text == "/" || !text.hasSuffix("/")), "not a normal path: \(text)")
        string = text
    }

    /// The path `text` names, normalised as `FilePath` does (`dir//a/` is `dir/a`).
    init(normalizing text: String) { string = FilePath(text).string }

    var description: String { string }

    /// This path with `name` joined to it: `root/name`. `name` is one name (no `/`); `.` and
    /// `..` only come from a directory a user gave, taken apart to create it.
    func appending(_ name: String) -> CachePath {
        assert(!name.isEmpty && !name.utf8.contains(UInt8(ascii: "/")), "not a name: \(name)")
        switch string {
        case "": return CachePath(name)
        case "/": return CachePath("/" + name)
        default: return CachePath(string + "/" + name)
        }
    }

    /// The last name in the path (`nil` for `/` or an empty path).
    var lastComponent: String? {
        guard let slash = string.utf8.lastIndex(of: UInt8(ascii: "/")) else { return string.isEmpty ? nil : string }
        let name = string[string.utf8.index(after: slash)...]
        return name.isEmpty ? nil : String(name)
    }

    /// The path of the directory this one names a file in: `/a/b` for `/a/b/c`, `/` for `/a`,
    /// the empty path for a single relative name.
    func removingLastComponent() -> CachePath {
        guard let slash = string.utf8.lastIndex(of: UInt8(ascii: "/")) else { return CachePath("") }
        if slash == string.startIndex { return CachePath("/") }
        return CachePath(String(string[..<slash]))
    }

    /// Whether the path starts at the root.
    var isAbsolute: Bool { string.utf8.first == UInt8(ascii: "/") }

    /// Calls `body` with the path as a NUL-terminated C string.
    func withPlatformString<Result>(_ body: (UnsafePointer<CChar>) throws -> Result) rethrows -> Result {
        try string.withCString(body)
    }
}
