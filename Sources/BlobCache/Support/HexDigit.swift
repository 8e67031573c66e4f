/// Hexadecimal digits, for every parser that reads them (blob ids, percent-escapes in the
/// server's paths, hex key files) and every writer of them (ids, digests, percent-escapes).
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

    /// `bytes` as lowercase hex, two digits each (`%02x`).
    ///
    ///     HexDigit.lowercase([0xab, 0x01])   // "ab01"
    package static func lowercase(_ bytes: some Sequence<UInt8>) -> String {
        var text: [UInt8] = []
        text.reserveCapacity(bytes.underestimatedCount * 2)
        for byte in bytes {
            text.append(lowercaseDigits[Int(byte >> 4)])
            text.append(lowercaseDigits[Int(byte & 0x0F)])
        }
        return String(decoding: text, as: UTF8.self)
    }

    /// `byte` as two uppercase hex digits, as percent-escapes are written.
    ///
    ///     HexDigit.uppercase(0x2f)   // "2F"
    package static func uppercase(_ byte: UInt8) -> String {
        String(decoding: [uppercaseDigits[Int(byte >> 4)], uppercaseDigits[Int(byte & 0x0F)]], as: UTF8.self)
    }

    private static let lowercaseDigits = Array("0123456789abcdef".utf8)
    private static let uppercaseDigits = Array("0123456789ABCDEF".utf8)
}
