import ArgumentParser

/// Byte sizes as the tool reads and prints them.
enum Size {
    /// Parses `1234`, `500k`, `500M`, `2G`, `1T` (decimal) or `64Ki`, `2Gi` (binary); `B` optional.
    static func parse(_ text: String) throws -> Int {
        var body = Substring(text.trimmingCharacters(in: .whitespaces))
        if body.hasSuffix("B") || body.hasSuffix("b") { body = body.dropLast() }
        var base = 1000
        if body.hasSuffix("i") {
            base = 1024
            body = body.dropLast()
        }
        var multiplier = 1
        if let last = body.last, let power = "kmgt".firstIndex(of: Character(last.lowercased())) {
            multiplier = (0...("kmgt".distance(from: "kmgt".startIndex, to: power))).reduce(1) { product, _ in product * base }
            body = body.dropLast()
        } else if base == 1024 {
            throw ValidationError("'\(text)' is not a size (Ki, Mi, Gi, Ti need a letter before the i)")
        }
        guard let value = Double(body), value >= 0, value * Double(multiplier) < 9e18 else {
            throw ValidationError("'\(text)' is not a size: use a number with an optional k, M, G, T (or Ki, Mi, Gi, Ti) suffix")
        }
        return Int(value * Double(multiplier))
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
        return unit == 0 ? "\(bytes) B" : String(format: "%.1f %@", value, units[unit])
    }
}

import Foundation
