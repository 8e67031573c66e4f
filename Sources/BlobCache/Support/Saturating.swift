extension Int {
    /// Adds `other`, stopping at `Int.max` (or `Int.min`) instead of trapping: for totals of
    /// numbers read from files (sizes of sparse files, counters), which may be anything.
    ///
    ///     var total = Int.max - 1
    ///     total.addSaturating(5)   // Int.max
    mutating func addSaturating(_ other: Int) {
        let (sum, overflow) = addingReportingOverflow(other)
        self = overflow ? (other > 0 ? .max : .min) : sum
    }
}
