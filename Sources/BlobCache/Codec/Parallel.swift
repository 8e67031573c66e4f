import Dispatch
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
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

    /// Runs `work` at once on every core (at most `limit` of them); one of them runs `first`
    /// before it, and another `second` (the same one when there is one core). `work` is
    /// expected to take its pieces from a shared `BlockQueue`, so a core busy with `first`, or
    /// lent to something else, simply takes fewer.
    static func onEveryCore(upTo limit: Int, first: (() -> Void)?, second: (() -> Void)? = nil,
                            _ work: @escaping () -> Void) {
        let workers = max(1, min(cores, limit))
        run((0..<workers).map { worker in
            {
                if worker == 0 { first?() }
                if worker == min(1, workers - 1) { second?() }
                work()
            }
        })
    }

    /// Gives this core up for a moment: a core waiting on another's progress (with one core
    /// lent to something else, spinning would keep the awaited work from running).
    static func yield() {
        sched_yield()
    }

    /// The tasks, shared with `concurrentPerform`'s threads; each task writes only its own
    /// results, which are read after every task has finished.
    private final class Tasks: @unchecked Sendable {
        let tasks: [() -> Void]
        init(_ tasks: [() -> Void]) { self.tasks = tasks }
    }
}

/// Hands out the numbers 0..<count to the cores working on one value, each number once.
final class BlockQueue: Sendable {
    private let count: Int
    private let taken = Atomic<Int>(0)
    private let halted = Atomic<Bool>(false)

    init(count: Int) { self.count = count }

    /// The next number nobody has taken, or `nil` when all are taken or the work was stopped.
    func next() -> Int? {
        guard !halted.load(ordering: .relaxed) else { return nil }
        let index = taken.wrappingAdd(1, ordering: .relaxed).oldValue
        return index < count ? index : nil
    }

    /// Hands out nothing more (a piece failed).
    func stop() { halted.store(true, ordering: .relaxed) }

    /// Whether `stop` was called (read once every core is done).
    var stopped: Bool { halted.load(ordering: .relaxed) }
}
