/// Byte sizes as people write them, for limits read from the command line, the environment or
/// `DIR/config`: `1234`, `500k`, `500M`, `2G`, `1T` (decimal) or `64Ki`, `2Gi` (binary); a
/// trailing `B` is optional.
///
///     let cap = try ByteSize.parse("2Gi")   // 2_147_483_648
public enum ByteSize {
    /// The number of bytes `text` names; `BlobCacheError.invalidConfiguration` saying how to
    /// write one when it is not a size (negative, not a number, or over 9 × 10^18).
    ///
    ///     configuration.maxStoredBytes = try ByteSize.parse("500M")
    public static func parse(_ text: String) throws(BlobCacheError) -> Int {
        var body = Substring(text.trimmingWhitespace())
        if body.hasSuffix("B") || body.hasSuffix("b") { body = body.dropLast() }
        var base = 1000
        if body.hasSuffix("i") {
            base = 1024
            body = body.dropLast()
        }
        var multiplier = 1
        if let last = body.last, let power = "kmgt".firstIndex(of: Character(last.lowercased())) {
            let exponent = "kmgt".distance(from: "kmgt".startIndex, to: power) + 1
            multiplier = (0..<exponent).reduce(1) { product, _ in product * base }
            body = body.dropLast()
        } else if base == 1024 {
            throw .invalidConfiguration(reason: "'\(text)' is not a size (Ki, Mi, Gi, Ti need a letter before the i)")
        }
        // Digits and one dot only: `Double` would also take "inf", "nan", hex and exponents.
        guard !body.isEmpty, body.allSatisfy({ $0.isASCII && ($0.isNumber || $0 == ".") }),
              body.filter({ $0 == "." }).count <= 1, body != ".",
              let value = Double(body), value * Double(multiplier) < 9e18 else {
            throw .invalidConfiguration(
                reason: "'\(text)' is not a size: use a number with an optional k, M, G, T (or Ki, Mi, Gi, Ti) suffix")
        }
        return Int(value * Double(multiplier))
    }
}
