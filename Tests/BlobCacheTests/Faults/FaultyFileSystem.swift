import Foundation
import SystemPackage
@testable import BlobCache

/// The real file system with every call counted (and, when asked, logged), and one fault
/// injected on demand: the Nth call of a kind fails with a chosen errno, or the process
/// "crashes" there (that call and every later one fails, so nothing more reaches the disk;
/// the test then reopens from the files as they are). With power-loss tracking on, it also
/// keeps what a power cut could undo (`PowerLossModel`).
final class FaultyFileSystem: FileSystem, @unchecked Sendable {
    enum Fault: Sendable, Hashable, CustomStringConvertible {
        case fail(Errno)
        case crash

        var description: String {
            switch self {
            case .fail(let errno): "\(errno)"
            case .crash: "crash"
            }
        }
    }

    /// Fire `fault` at the `occurrence`th call (1-based) of `call` whose path ends with
    /// `pathSuffix` (every path when `nil`), counted from the last `arm`.
    struct Trigger: Sendable, CustomStringConvertible {
        var call: FileSystemCall
        var occurrence: Int
        var fault: Fault
        var pathSuffix: String? = nil

        var description: String { "\(fault) at \(call) #\(occurrence)" + (pathSuffix.map { " of *\($0)" } ?? "") }
    }

    private struct State {
        var counts: [FileSystemCall: Int] = [:]
        var trigger: Trigger?
        var fired = false
        var firedPath: String?
        var crashed = false
        var paths: [Int32: CachePath] = [:]
        var trace: [(call: FileSystemCall, path: String)]?
        var model: PowerLossModel?
        var beforeOpen: (@Sendable (CachePath) -> Void)?
        var afterOpen: (@Sendable (CachePath) -> Void)?
        var beforeSync: (@Sendable (CachePath) -> Void)?
        var beforeRename: (@Sendable (CachePath, CachePath) -> Void)?
        var beforeList: (@Sendable (CachePath) -> Void)?
        var beforeWrite: (@Sendable (CachePath) -> Void)?
        var afterMakeDirectory: (@Sendable (CachePath) -> Void)?
        var shortWrite: (suffix: String, between: @Sendable () -> Void, writes: Int)?
    }

    private let real = PosixFileSystem()
    private let state = Locked(State())

    /// Starts counting afresh, with `trigger` armed (or none).
    func arm(_ trigger: Trigger?) {
        state.withLock {
            $0.counts = [:]
            $0.trigger = trigger
            $0.fired = false
            $0.firedPath = nil
            $0.crashed = false
        }
    }

    /// Crashes now: every later call fails, as if the process were gone.
    func crashNow() { state.withLock { $0.crashed = true } }

    /// Calls of each kind since the last `arm`.
    var counts: [FileSystemCall: Int] { state.withLock { $0.counts } }
    /// Whether the armed fault fired.
    var fired: Bool { state.withLock { $0.fired } }
    /// The path of the call the armed fault fired on.
    var firedPath: String? { state.withLock { $0.firedPath } }
    /// Whether a crash fired (every call fails since).
    var crashed: Bool { state.withLock { $0.crashed } }

    /// Starts logging each call (kind and path) until `stopTracing`.
    func startTracing() { state.withLock { $0.trace = [] } }
    /// The calls logged since `startTracing`.
    func stopTracing() -> [(call: FileSystemCall, path: String)] {
        state.withLock { let trace = $0.trace ?? []; $0.trace = nil; return trace }
    }

    /// Runs `before` and `after` around every `open` (outside this file system's lock), so a
    /// test can make another thread's work happen at exactly that point.
    func interposeOnOpen(before: (@Sendable (CachePath) -> Void)?, after: (@Sendable (CachePath) -> Void)?) {
        state.withLock {
            $0.beforeOpen = before
            $0.afterOpen = after
        }
    }

    /// Runs `before` ahead of every `fsync` of a file, with the path the file was opened by
    /// (outside this file system's lock), so a test can act while another thread waits on it.
    func interposeOnSync(before: (@Sendable (CachePath) -> Void)?) {
        state.withLock { $0.beforeSync = before }
    }

    /// Runs `before` ahead of every directory listing (outside this file system's lock), with
    /// the directory's path, so a test can change the directory just before it is read.
    func interposeOnList(before: (@Sendable (CachePath) -> Void)?) {
        state.withLock { $0.beforeList = before }
    }

    /// Runs `before` ahead of every `rename` (outside this file system's lock), with its source
    /// and destination, so a test can change the directory at exactly that point.
    func interposeOnRename(before: (@Sendable (CachePath, CachePath) -> Void)?) {
        state.withLock { $0.beforeRename = before }
    }

    /// Runs `before` ahead of every `write`, with the path the file was opened by (outside this
    /// file system's lock).
    func interposeOnWrite(before: (@Sendable (CachePath) -> Void)?) {
        state.withLock { $0.beforeWrite = before }
    }

    /// Runs `after` once each `mkdir` has made its directory (outside this file system's lock).
    func interposeOnMakeDirectory(after: (@Sendable (CachePath) -> Void)?) {
        state.withLock { $0.afterMakeDirectory = after }
    }

    /// Takes the directory at `root` as durable now and tracks, from here on, what a power
    /// cut could undo.
    func startPowerLossTracking(root: String) {
        let model = PowerLossModel(root: root)
        state.withLock { $0.model = model }
    }

    /// The power-loss model as it stands (call after the crash).
    var powerLossModel: PowerLossModel? { state.withLock { $0.model } }

    // MARK: The seam

    /// Counts a call and fires the armed fault when it is due.
    private func enter(_ call: FileSystemCall, _ path: CachePath?) throws(Errno) {
        let failure: Errno? = state.withLock { (state: inout State) -> Errno? in
            if state.crashed { return .ioError }
            state.trace?.append((call, path?.string ?? "?"))
            guard let trigger = state.trigger, trigger.call == call, !state.fired else {
                state.counts[call, default: 0] += 1
                return nil
            }
            if let suffix = trigger.pathSuffix, !(path?.string.hasSuffix(suffix) ?? false) { return nil }
            state.counts[call, default: 0] += 1
            guard state.counts[call] == trigger.occurrence else { return nil }
            state.fired = true
            state.firedPath = path?.string
            switch trigger.fault {
            case .fail(let errno): return errno
            case .crash:
                state.crashed = true
                return .ioError
            }
        }
        if let failure { throw failure }
    }

    private func path(of fd: FileDescriptor) -> CachePath? { state.withLock { $0.paths[fd.rawValue] } }

    private func record(_ change: (inout PowerLossModel) -> Void) {
        state.withLock { if $0.model != nil { change(&$0.model!) } }
    }

    func open(_ path: CachePath, _ mode: FileDescriptor.AccessMode, options: FileDescriptor.OpenOptions,
              permissions: FilePermissions?) throws(Errno) -> FileDescriptor {
        let (before, after) = state.withLock { ($0.beforeOpen, $0.afterOpen) }
        before?(path)
        defer { after?(path) }
        try enter(.open, path)
        let existed = (try? real.status(path)) != nil
        let fd = try real.open(path, mode, options: options, permissions: permissions)
        state.withLock { $0.paths[fd.rawValue] = path }
        record { $0.opened(path, fd: fd.rawValue, created: !existed, truncated: options.contains(.truncate)) }
        return fd
    }

    func close(_ fd: FileDescriptor) {
        state.withLock {
            $0.paths[fd.rawValue] = nil
            if $0.model != nil { $0.model!.closed(fd: fd.rawValue) }
        }
        real.close(fd)
    }

    func read(_ fd: FileDescriptor, into buffer: UnsafeMutableRawBufferPointer, at offset: Int64) throws(Errno) -> Int {
        try enter(.read, path(of: fd))
        return try real.read(fd, into: buffer, at: offset)
    }

    /// The next write to a file whose path ends with `suffix` writes half its bytes (a short
    /// write, as when the disk fills up) and then runs `between`; the write after it to that
    /// file fails with ENOSPC.
    func shortWriteNext(pathSuffix suffix: String, between: @escaping @Sendable () -> Void) {
        state.withLock { $0.shortWrite = (suffix, between, 0) }
    }

    func write(_ fd: FileDescriptor, _ bytes: UnsafeRawBufferPointer, at offset: Int64) throws(Errno) -> Int {
        let short = state.withLock { (state: inout State) -> (writes: Int, between: @Sendable () -> Void)? in
            guard let plan = state.shortWrite, state.paths[fd.rawValue]?.string.hasSuffix(plan.suffix) == true else { return nil }
            state.shortWrite = plan.writes == 0 ? (plan.suffix, plan.between, 1) : nil
            return (plan.writes, plan.between)
        }
        if let before = state.withLock({ $0.beforeWrite }), let path = path(of: fd) { before(path) }
        if let short {
            guard short.writes == 0 else { throw .noSpace }
            let written = try real.write(fd, UnsafeRawBufferPointer(rebasing: bytes.prefix(bytes.count / 2)), at: offset)
            short.between()
            return written
        }
        try enter(.write, path(of: fd))
        let written = try real.write(fd, bytes, at: offset)
        record { $0.wrote(fd: fd.rawValue, bytes: Array(bytes.prefix(written)), at: offset) }
        return written
    }

    func sync(_ fd: FileDescriptor) throws(Errno) {
        if let before = state.withLock({ $0.beforeSync }), let path = path(of: fd) { before(path) }
        try enter(.sync, path(of: fd))
        try real.sync(fd)
        record { $0.synced(fd: fd.rawValue) }
    }

    func syncData(_ fd: FileDescriptor) throws(Errno) {
        try enter(.syncData, path(of: fd))
        try real.syncData(fd)
        record { $0.synced(fd: fd.rawValue) }
    }

    func truncate(_ fd: FileDescriptor, to length: Int64) throws(Errno) {
        try enter(.truncate, path(of: fd))
        try real.truncate(fd, to: length)
        record { $0.truncated(fd: fd.rawValue, to: length) }
    }

    func rename(_ source: CachePath, to destination: CachePath) throws(Errno) {
        if let before = state.withLock({ $0.beforeRename }) { before(source, destination) }
        try enter(.rename, source)
        try real.rename(source, to: destination)
        state.withLock { state in
            for (fd, path) in state.paths where path == source { state.paths[fd] = destination }
        }
        record { $0.renamed(source, to: destination) }
    }

    func unlink(_ path: CachePath) throws(Errno) {
        try enter(.unlink, path)
        try real.unlink(path)
        record { $0.unlinked(path) }
    }

    func makeDirectory(_ path: CachePath, permissions: FilePermissions) throws(Errno) {
        try enter(.makeDirectory, path)
        try real.makeDirectory(path, permissions: permissions)
        record { $0.madeDirectory(path) }
        if let after = state.withLock({ $0.afterMakeDirectory }) { after(path) }
    }

    func removeDirectory(_ path: CachePath) throws(Errno) {
        try enter(.removeDirectory, path)
        try real.removeDirectory(path)
        record { $0.removedDirectory(path) }
    }

    func listDirectory(_ path: CachePath) throws(Errno) -> [String] {
        if let before = state.withLock({ $0.beforeList }) { before(path) }
        try enter(.listDirectory, path)
        return try real.listDirectory(path)
    }

    func status(_ path: CachePath) throws(Errno) -> stat {
        try enter(.status, path)
        return try real.status(path)
    }

    func status(_ fd: FileDescriptor) throws(Errno) -> stat {
        try enter(.status, path(of: fd))
        return try real.status(fd)
    }

    func map(_ fd: FileDescriptor, length: Int, shared: Bool, populate: Bool) throws(Errno) -> UnsafeMutableRawPointer {
        try enter(.map, path(of: fd))
        return try real.map(fd, length: length, shared: shared, populate: populate)
    }

    func mapWritable(_ fd: FileDescriptor, length: Int) throws(Errno) -> UnsafeMutableRawPointer {
        try enter(.map, path(of: fd))
        return try real.mapWritable(fd, length: length)
    }

    func unmap(_ address: UnsafeMutableRawPointer, length: Int) { real.unmap(address, length: length) }

    func unlock(_ fd: FileDescriptor) { real.unlock(fd) }

    func lockByte(_ fd: FileDescriptor, at offset: Int64, _ kind: ByteLock) throws(Errno) {
        try enter(.lock, path(of: fd))
        try real.lockByte(fd, at: offset, kind)
    }

    func lockExclusively(_ fd: FileDescriptor, wait: Bool) throws(Errno) {
        try enter(.lock, path(of: fd))
        try real.lockExclusively(fd, wait: wait)
    }

    func setPermissions(_ fd: FileDescriptor, _ permissions: FilePermissions) throws(Errno) {
        try enter(.setPermissions, path(of: fd))
        try real.setPermissions(fd, permissions)
    }
}

extension BlobCache.Configuration {
    /// This configuration with every file call going through `fileSystem`.
    func through(_ fileSystem: FaultyFileSystem) -> Self {
        var copy = self
        copy.fileSystem = fileSystem
        return copy
    }
}

/// Opens the cache in `dir` with the test configuration, through `fileSystem` when given.
func openCache(_ dir: TemporaryDirectory, _ fileSystem: FaultyFileSystem? = nil,
               _ change: (inout BlobCache.Configuration) -> Void = { _ in }) throws -> BlobCache {
    var configuration = BlobCache.Configuration.testing(change)
    if let fileSystem { configuration.fileSystem = fileSystem }
    return try BlobCache(directory: dir.path, configuration: configuration)
}
