/// A map from segment number to `Value`, kept as two arrays sorted by number.
///
/// The store's per-segment tables use it rather than `Dictionary`: a cache holds tens to
/// thousands of segments, where a binary search costs about what hashing does, and opening
/// a cache then instantiates no `Dictionary` keyed by `UInt32`, whose first use in a process
/// makes the Swift runtime scan every protocol conformance in the process for
/// `UInt32: Hashable` (a tenth of a cold open's time).
///
///     var sizes = SegmentMap<Int64>()
///     sizes[7] = 4096
///     sizes.keys   // [7]
struct SegmentMap<Value> {
    /// The segment numbers, ascending.
    private(set) var keys: [UInt32] = []
    /// The values, in the order of `keys`.
    private(set) var values: [Value] = []

    /// Whether it holds no segment.
    var isEmpty: Bool { keys.isEmpty }

    /// How many segments it holds.
    var count: Int { keys.count }

    /// Where `number` is in `keys`, or where it would be inserted.
    private func position(of number: UInt32) -> (index: Int, found: Bool) {
        var low = 0, high = keys.count
        while low < high {
            let middle = (low + high) / 2
            if keys[middle] < number { low = middle + 1 } else { high = middle }
        }
        return (low, low < keys.count && keys[low] == number)
    }

    /// The value of segment `number`; setting `nil` removes it.
    subscript(number: UInt32) -> Value? {
        get {
            let (index, found) = position(of: number)
            return found ? values[index] : nil
        }
        set {
            let (index, found) = position(of: number)
            switch (found, newValue) {
            case (true, let value?): values[index] = value
            case (true, nil):
                keys.remove(at: index)
                values.remove(at: index)
            case (false, let value?):
                keys.insert(number, at: index)
                values.insert(value, at: index)
            case (false, nil): break
            }
        }
    }

    /// Removes segment `number` and returns its value, if it was held.
    @discardableResult
    mutating func removeValue(forKey number: UInt32) -> Value? {
        let value = self[number]
        self[number] = nil
        return value
    }
}
