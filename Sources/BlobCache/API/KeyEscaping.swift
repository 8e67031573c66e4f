extension BlobCache {
    /// A key as one line of text, escaped by Unicode scalar: tab, newline, carriage return,
    /// backslash and NUL shown as `\t`, `\n`, `\r`, `\\`, `\0`, every other C0 control and DEL
    /// as `\xHH`, C1 controls, line and paragraph separators and bidirectional overrides as
    /// `\u{HHHH}`. What `blobcache ls` and `fsck` print: a key can never break a line, send a
    /// terminal escape or reorder what follows it.
    ///
    ///     BlobCache.escapedKey("a\tb\u{1b}")   // "a\\tb\\x1b"
    public static func escapedKey(_ key: String) -> String {
        var out = ""
        out.reserveCapacity(key.utf8.count)
        for scalar in key.unicodeScalars {
            switch scalar {
            case "\t": out += "\\t"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\\": out += "\\\\"
            case "\u{0}": out += "\\0"
            case "\u{1}"..."\u{1f}", "\u{7f}":
                let hex = String(scalar.value, radix: 16)
                out += "\\x" + (hex.count < 2 ? "0" : "") + hex
            case "\u{80}"..."\u{9f}", "\u{2028}", "\u{2029}", "\u{202a}"..."\u{202e}", "\u{2066}"..."\u{2069}":
                // C1 controls (CSI, NEL), line and paragraph separators, bidirectional overrides.
                out += "\\u{" + String(scalar.value, radix: 16) + "}"
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out
    }
}
