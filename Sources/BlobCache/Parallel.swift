import Dispatch

/// Runs two pieces of work on two cores and returns when both are done. Used for large values,
/// where hashing and compressing (put), or checksumming and decoding (get), each take
/// hundreds of microseconds; below `threshold` bytes the hand-off costs more than it saves.
enum Parallel {
    static let threshold = 256 * 1024

    static func both<A, B>(_ first: () -> A, _ second: () -> B) -> (A, B) {
        var a: A?
        var b: B?
        withoutActuallyEscaping(first) { first in
            withoutActuallyEscaping(second) { second in
                let work = UnsafeWork(first: first, second: second)
                DispatchQueue.concurrentPerform(iterations: 2) { index in
                    if index == 0 { work.runFirst() } else { work.runSecond() }
                }
                a = work.a
                b = work.b
            }
        }
        return (a!, b!)
    }

    /// Holds the two closures and their results while `concurrentPerform` runs them; each slot
    /// is written by exactly one thread and read after both have finished.
    private final class UnsafeWork<A, B>: @unchecked Sendable {
        let first: () -> A
        let second: () -> B
        var a: A?
        var b: B?
        init(first: @escaping () -> A, second: @escaping () -> B) {
            self.first = first
            self.second = second
        }
        func runFirst() { a = first() }
        func runSecond() { b = second() }
    }
}
