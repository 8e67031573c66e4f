/// Hexadecimal digits, for every parser that reads them: blob ids, percent-escapes in the
/// server's paths, hex key files.
///
///     HexDigit.value(of: UInt8(ascii: "f"))   // 15
package enum HexDigit {
    /// The value of one hex digit, either case; `nil` for any other byte.
    package static func value(of byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
