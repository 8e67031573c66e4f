import Foundation
import Testing
@testable import BlobCache

/// Tasks waiting for something that happens once: they wait until it has.
private final class Moment: Sendable {
    /// `nil` once it happened.
    private let waiting = Locked<[CheckedContinuation<Void, Never>]?>([])

    func wait() async {
        await withCheckedContinuation { continuation in
            let happened = waiting.withLock { waiting -> Bool in
                guard waiting != nil else { return true }
                waiting!.append(continuation)
                return false
            }
            if happened { continuation.resume() }
        }
    }

    func happen() {
        for continuation in waiting.withLock({ waiting -> [CheckedContinuation<Void, Never>] in
            defer { waiting = nil }
            return waiting ?? []
        }) { continuation.resume() }
    }
}

/// Counts calls to a loader; lets a test hold the load until every caller waits.
private final class LoadGate: Sendable {
    let calls = Locked(0)
    private let started = Moment()
    private let opened = Moment()

    func load(_ value: [UInt8], failing: Bool = false) async throws -> [UInt8] {
        calls.withLock { $0 += 1 }
        started.happen()
        await opened.wait()
        if failing { throw LoadFailed() }
        return value
    }

    /// Lets every load (and any later one) finish.
    func open() { opened.happen() }

    /// Returns once the loader was called.
    func waitUntilStarted() async { await started.wait() }
}

private struct LoadFailed: Error {}

@Suite("Single-flight loading")
struct SingleFlightTests {
    @Test("1,000 concurrent callers of one missing key: one load, every caller gets its value, stored once")
    func oneLoad() async throws {
        let dir = TemporaryDirectory()
        let cache = try BlobCache(directory: dir.path, configuration: .testing())
        let gate = LoadGate()
        let value = Samples.random(5000)
        let results = try await withThrowingTaskGroup(of: [UInt8].self) { group in
            for _ in 0..<1000 {
                group.addTask { try await cache.value(forKey: "k") { try await gate.load(value) } }
            }
            // Let the load finish only once it started (callers keep arriving meanwhile).
            await gate.waitUntilStarted()
            gate.open()
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(gate.calls.withLock { $0 } == 1)
        #expect(results.count == 1000 && results.allSatisfy { $0 == value })
        #expect(try cache.bytes(forKey: "k") == value)
        #expect(cache.statistics().sets == 1)
        // Stored: the next caller loads nothing.
        #expect(try await cache.value(forKey: "k") { Issue.record("loaded again"); return [] } == value)
    }

    @Test("an error reaches every waiter and stores nothing; the next call loads again")
    func errorReachesAll() async throws {
        let dir = TemporaryDirectory()
        let cache = try BlobCache(directory: dir.path, configuration: .testing())
        let gate = LoadGate()
        let failures = await withTaskGroup(of: Bool.self) { group in
            for _ in 0..<50 {
                group.addTask {
                    do { _ = try await cache.value(forKey: "k") { try await gate.load([1], failing: true) }; return false }
                    catch { return error is LoadFailed }
                }
            }
            await gate.waitUntilStarted()
            // Every caller waits on the one flight before it fails (none comes after its end).
            while (cache.flights.running("k")?.waiterCount ?? 0) < 50 { await Task.yield() }
            gate.open()
            return await group.reduce(0) { $0 + ($1 ? 1 : 0) }
        }
        #expect(failures == 50)
        #expect(gate.calls.withLock { $0 } == 1)
        #expect(try cache.contains("k") == false)
        #expect(try await cache.value(forKey: "k") { [7] } == [7])
    }

    @Test("a cancelled caller stops waiting; the load goes on for the others and is stored")
    func cancellation() async throws {
        let dir = TemporaryDirectory()
        let cache = try BlobCache(directory: dir.path, configuration: .testing())
        let gate = LoadGate()
        let value = Samples.random(100)
        let cancelled = Task { try await cache.value(forKey: "k") { try await gate.load(value) } }
        await gate.waitUntilStarted()
        let other = Task { try await cache.value(forKey: "k") { Issue.record("second load"); return [] } }
        cancelled.cancel()
        await #expect(throws: CancellationError.self) { try await cancelled.value }
        gate.open()
        #expect(try await other.value == value)
        #expect(try cache.bytes(forKey: "k") == value)
        #expect(gate.calls.withLock { $0 } == 1)
    }

    @Test("a hit never calls the loader; keys are validated")
    func hitsAndKeys() async throws {
        let dir = TemporaryDirectory()
        let cache = try BlobCache(directory: dir.path, configuration: .testing())
        try cache.set([1, 2], forKey: "k")
        #expect(try await cache.value(forKey: "k") { Issue.record("loaded a hit"); return [] } == [1, 2])
        await #expect(throws: BlobCacheError.self) { try await cache.value(forKey: "") { [] } }
    }
}
