import ArgumentParser
import BlobCache

/// Byte sizes as the tool reads and prints them.
enum Size {
    /// Parses `1234`, `500k`, `500M`, `2G`, `1T` (decimal) or `64Ki`, `2Gi` (binary); `B` optional
    /// (`ByteSize.parse`), as a usage error when it is not a size.
    static func parse(_ text: String) throws -> Int {
        do { return try ByteSize.parse(text) } catch {
            guard case .invalidConfiguration(let reason) = error else { throw error }
            throw ValidationError(reason)
        }
    }

    /// `1.5 MB` style (decimal), for people.
    static func format(_ bytes: Int) -> String {
        let units = ["B", "kB", "MB", "GB", "TB"]
        var value = Double(bytes)
        var unit = 0
        while value >= 1000 && unit < units.count - 1 {
            value /= 1000
            unit += 1
        }
        return unit == 0 ? "\(bytes) B" : "\(Formatting.fixed(value, decimals: 1)) \(units[unit])"
    }
}

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
