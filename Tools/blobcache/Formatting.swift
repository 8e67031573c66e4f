#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Number and path formatting the tool prints, without full Foundation (`String(format:)`,
/// `NSString.lastPathComponent`), which would link ICU and its data (~37 MB) into the static
/// `blobcache`.
enum Formatting {
    /// `value` with `decimals` digits after the point, exactly as `String(format: "%.Nf")`
    /// wrote it: the same C `vsnprintf` (the process keeps the "C" locale, so the point is `.`).
    static func fixed(_ value: Double, decimals: Int) -> String {
        let format = "%.\(decimals)f"
        let length = withVaList([value]) { vsnprintf(nil, 0, format, $0) }
        guard length >= 0 else { return "\(value)" }
        var buffer = [CChar](repeating: 0, count: Int(length) + 1)
        _ = withVaList([value]) { vsnprintf(&buffer, buffer.count, format, $0) }
        return String(decoding: buffer.prefix(Int(length)).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// The last component of a file path (`/a/b/c.txt` → `c.txt`), trailing slashes ignored,
    /// `/` for the root, as `NSString.lastPathComponent` gave it.
    static func lastPathComponent(_ path: String) -> String {
        guard let last = path.split(separator: "/").last else { return path.isEmpty ? "" : "/" }
        return String(last)
    }
}
