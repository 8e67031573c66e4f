#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The wall clock a cache reads for creation, access and expiry times. Inject a `ManualClock`
/// in tests to expire entries without sleeping.
///
///     let clock = ManualClock()
///     var configuration = BlobCache.Configuration()
///     configuration.clock = clock
public protocol CacheClock: Sendable {
    /// The current time.
    func now() -> Date
}

/// The system's real-time clock.
public struct SystemClock: CacheClock {
    /// Makes the system clock.
    ///
    ///     configuration.clock = SystemClock()
    public init() {}
    /// The system's time.
    public func now() -> Date { Date() }
}

/// A clock that moves only when told to: for deterministic tests of expiry and recency.
///
///     let clock = ManualClock(start: Date(timeIntervalSince1970: 1_000_000))
///     clock.advance(by: .seconds(61))
public final class ManualClock: CacheClock {
    private let current: Locked<Date>

    /// Starts the clock at `start`.
    public init(start: Date = Date(timeIntervalSince1970: 1_700_000_000)) {
        current = Locked(start)
    }

    /// The time it was set to, plus every `advance`.
    public func now() -> Date { current.withLock { $0 } }

    /// Moves the clock forward (or back, with a negative duration).
    public func advance(by duration: Duration) {
        let seconds = Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
        current.withLock { $0 = $0.addingTimeInterval(seconds) }
    }
}

/// Nanoseconds since the Unix epoch, the journal's time unit.
enum Nanoseconds {
    static let never = Int64.max

    static func from(_ date: Date) -> Int64 {
        let value = date.timeIntervalSince1970 * 1e9
        guard value < 9.2e18 else { return never - 1 }
        guard value > -9.2e18 else { return Int64.min + 1 }
        return Int64(value)
    }

    static func date(_ nanoseconds: Int64) -> Date {
        Date(timeIntervalSince1970: Double(nanoseconds) / 1e9)
    }

    static func from(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        let (scaled, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        if overflow { return seconds < 0 ? Int64.min + 1 : never - 1 }
        return scaled.addingReportingOverflow(attoseconds / 1_000_000_000).partialValue
    }
}
