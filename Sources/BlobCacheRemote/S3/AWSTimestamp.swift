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

/// A request's signing time in UTC, as `x-amz-date` carries it (`20130524T000000Z`); the
/// signing key is derived for its day (`date`). Written from `gmtime_r`: `DateFormatter` is full
/// Foundation, which the static `blobcache` does not link.
///
///     let now = AWSTimestamp(Date())   // now.dateTime == "20261129T143904Z"
struct AWSTimestamp: Sendable, Equatable {
    /// `yyyyMMdd'T'HHmmss'Z'`.
    let dateTime: String

    /// The time `date` falls in, to the second.
    init(_ date: Date) {
        var seconds = time_t(date.timeIntervalSince1970.rounded(.down))
        var parts = tm()
        _ = gmtime_r(&seconds, &parts)
        func digits(_ value: Int32, _ width: Int) -> String {
            let text = String(value)
            return String(repeating: "0", count: max(0, width - text.count)) + text
        }
        dateTime = digits(parts.tm_year + 1900, 4) + digits(parts.tm_mon + 1, 2) + digits(parts.tm_mday, 2) + "T"
            + digits(parts.tm_hour, 2) + digits(parts.tm_min, 2) + digits(parts.tm_sec, 2) + "Z"
    }

    /// A time given as `x-amz-date` writes it (for tests and published examples).
    init(dateTime: String) { self.dateTime = dateTime }

    /// `yyyyMMdd`: the day the signing key is derived for.
    var date: String { String(dateTime.prefix(8)) }
}
