import Dispatch
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Runs pieces of work on every core and returns when all are done. Used for large values,
/// where hashing and compressing (put), or checksumming and decoding (get), each take hundreds
/// of microseconds; below `threshold` bytes the hand-off costs more than it saves.
enum Parallel {
    static let threshold = 256 * 1024

    /// The cores this process may run on (its CPU affinity and quota, at least 1).
    static let cores = max(1, ProcessInfo.processInfo.activeProcessorCount)

    /// Runs every task once, at the same time where there are cores for it.
    static func run(_ tasks: [() -> Void]) {
        let box = Tasks(tasks)
        DispatchQueue.concurrentPerform(iterations: tasks.count) { box.tasks[$0]() }
    }

    /// Runs two functions at once and returns both results.
    static func both<A, B>(_ first: @escaping () -> A, _ second: @escaping () -> B) -> (A, B) {
        var a: A?
        var b: B?
        run([{ a = first() }, { b = second() }])
        return (a!, b!)
    }

    /// The tasks, shared with `concurrentPerform`'s threads; each task writes only its own
    /// results, which are read after every task has finished.
    private final class Tasks: @unchecked Sendable {
        let tasks: [() -> Void]
        init(_ tasks: [() -> Void]) { self.tasks = tasks }
    }
}
