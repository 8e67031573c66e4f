#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The IMF-fixdate of RFC 9110 (`Sun, 06 Nov 1994 08:49:37 GMT`), written by hand from
/// `gmtime_r`: `DateFormatter` is full Foundation, which would link ICU and its data (~37 MB)
/// into the static `blobcache` for this one string. Fractional seconds are dropped, as
/// `DateFormatter`'s `ss` did.
enum HTTPDate {
    private static let weekdays = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
    private static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    /// `date` as an IMF-fixdate in GMT.
    static func string(from date: Date) -> String {
        var seconds = time_t(date.timeIntervalSince1970.rounded(.down))
        var parts = tm()
        _ = gmtime_r(&seconds, &parts)
        return "\(weekdays[Int(parts.tm_wday)]), \(padded(parts.tm_mday, 2)) \(months[Int(parts.tm_mon)]) "
            + "\(padded(parts.tm_year + 1900, 4)) \(padded(parts.tm_hour, 2)):\(padded(parts.tm_min, 2)):\(padded(parts.tm_sec, 2)) GMT"
    }

    /// `value` in decimal with leading zeros to `width` digits.
    private static func padded(_ value: Int32, _ width: Int) -> String {
        let digits = String(value)
        return String(repeating: "0", count: max(0, width - digits.count)) + digits
    }
}
