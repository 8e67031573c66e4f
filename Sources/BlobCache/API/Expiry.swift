#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// When an entry stops being returned.
///
///     try cache.set(bytes, forKey: "session", expiry: .after(.seconds(3600)))
public enum Expiry: Sendable, Hashable {
    /// Kept until removed or evicted.
    case never
    /// Expires this long after it is set.
    case after(Duration)
    /// Expires at this moment.
    case at(Date)

    /// The absolute expiry time in journal nanoseconds for an entry set at `now`.
    func deadline(from now: Int64) -> Int64 {
        switch self {
        case .never: return Nanoseconds.never
        case .after(let duration):
            let (sum, overflow) = now.addingReportingOverflow(Nanoseconds.from(duration))
            return overflow ? Nanoseconds.never - 1 : min(sum, Nanoseconds.never - 1)
        case .at(let date): return min(Nanoseconds.from(date), Nanoseconds.never - 1)
        }
    }
}
