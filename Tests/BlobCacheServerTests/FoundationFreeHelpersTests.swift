import BlobCache
@testable import BlobCacheServer
import Foundation
import Testing

/// The server's hand-written stand-ins for full Foundation (kept out of the static `blobcache`
/// so ICU is not linked) give what full Foundation gave, byte for byte; the tests may use it.
struct FoundationFreeHelpersTests {
    @Test("HTTPDate writes what DateFormatter's IMF-fixdate did, fractional seconds dropped")
    func httpDate() {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        let seconds: [Double] = [0, 1, 784_111_777, 784_111_777.999, 951_782_400, 1_700_000_000.5, 4_102_444_799, 253_402_300_799, -1]
        for value in seconds + (0..<200).map({ Double($0) * 12_345_678.901 }) {
            let date = Date(timeIntervalSince1970: value)
            #expect(HTTPDate.string(from: date) == formatter.string(from: date), "\(value)")
        }
        #expect(HTTPDate.string(from: Date(timeIntervalSince1970: 784_111_777)) == "Sun, 06 Nov 1994 08:49:37 GMT")
    }

    @Test("percentDecoded decodes as removingPercentEncoding does, nil for bad escapes or bytes")
    func percentDecoding() {
        let paths = ["", "a", "a%20b", "%2F%2f", "%", "%4", "%zz", "a%4g", "%E2%82%AC", "%C3", "%FF", "%00x", "caf%C3%A9/", "100%", "%%41", "ü%20"]
        for path in paths {
            #expect(path.percentDecoded == path.removingPercentEncoding, "\(path)")
        }
        // Foundation's one exception: a lone %A9 becomes U+FFFD there, which made two paths one key.
        for path in ["%A9", "a%A9", "%C3%A9%A9"] { #expect(path.percentDecoded == nil, "\(path)") }
    }

    @Test("trimmingWhitespace trims what CharacterSet.whitespaces did, newlines kept")
    func trimming() {
        let lines = ["", " ", "\t a b \t", "\u{A0}x\u{2003}", "\u{3000}y\u{3000}", "\nz\n", " \r w \r ", "\u{200B}v\u{200B}", "  only  "]
        for line in lines {
            #expect(line.trimmingWhitespace() == line.trimmingCharacters(in: .whitespaces), "\(line.debugDescription)")
        }
    }

    @Test("isHorizontalWhitespace is CharacterSet.whitespaces over every scalar")
    func whitespaceSet() {
        let differing = (0..<0x110000).compactMap(Unicode.Scalar.init).filter {
            $0.isHorizontalWhitespace != CharacterSet.whitespaces.contains($0)
        }
        #expect(differing.isEmpty, "\(differing)")
    }

    @Test("lowercaseHex is %02x per byte")
    func hex() {
        let bytes: [UInt8] = [0, 1, 0x0F, 0x10, 0xAB, 0xFF]
        #expect(HexDigit.lowercase(bytes) == bytes.map { String(format: "%02x", $0) }.joined())
    }
}
