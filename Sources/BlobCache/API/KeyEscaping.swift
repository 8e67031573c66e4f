extension BlobCache {
    /// A key as one line of text: tab, newline, backslash and NUL shown as `\t`, `\n`, `\\`,
    /// `\0`. What `blobcache ls` and `fsck` print.
    ///
    ///     BlobCache.escapedKey("a\tb")   // "a\\tb"
    public static func escapedKey(_ key: String) -> String {
        var out = ""
        out.reserveCapacity(key.utf8.count)
        for character in key {
            switch character {
            case "\t": out += "\\t"
            case "\n": out += "\\n"
            case "\\": out += "\\\\"
            case "\u{0}": out += "\\0"
            default: out.append(character)
            }
        }
        return out
    }
}
