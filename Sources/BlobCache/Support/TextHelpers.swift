/// Small string helpers in place of full Foundation's (`trimmingCharacters(in:)`,
/// `removingPercentEncoding`), which would link ICU and its data into the static `blobcache`.
extension StringProtocol {
    /// The text without leading and trailing spaces and tabs: what `CharacterSet.whitespaces`
    /// trimmed (Unicode's space separators and U+0009), newlines kept.
    package func trimmingWhitespace() -> String {
        let scalars = unicodeScalars
        guard let first = scalars.firstIndex(where: { !$0.isHorizontalWhitespace }) else { return "" }
        let last = scalars.lastIndex(where: { !$0.isHorizontalWhitespace })!
        var trimmed = String.UnicodeScalarView()
        trimmed.append(contentsOf: scalars[first...last])
        return String(trimmed)
    }
}

extension Unicode.Scalar {
    /// A space separator (general category Zs), a tab or U+200B (zero width space):
    /// `CharacterSet.whitespaces`, checked against it over every scalar.
    package var isHorizontalWhitespace: Bool { self == "\t" || self == "\u{200B}" || properties.generalCategory == .spaceSeparator }
}

extension String {
    /// The text with each `%XX` replaced by the byte it names, as `removingPercentEncoding`
    /// (full Foundation) does: nil when a `%` is not followed by two hex digits or the decoded
    /// bytes are not valid UTF-8. (Foundation alone turns a stray `%A9` into U+FFFD, so that
    /// two paths named one key; here it is refused like every other invalid byte.)
    package var percentDecoded: String? {
        var bytes: [UInt8] = []
        var input = utf8.makeIterator()
        while let byte = input.next() {
            guard byte == UInt8(ascii: "%") else {
                bytes.append(byte)
                continue
            }
            guard let high = input.next().flatMap(HexDigit.value(of:)), let low = input.next().flatMap(HexDigit.value(of:)) else { return nil }
            bytes.append(high << 4 | low)
        }
        return String(validating: bytes, as: UTF8.self)
    }
}
