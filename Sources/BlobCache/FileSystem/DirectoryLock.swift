import SystemPackage
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// `DIR/lock` and the two locks every open cache takes on it (docs/ARCHITECTURE.md, "Many
/// processes"):
/// - `flock(LOCK_EX)` for one operation at a time (`hold`/`release`), so a script's
///   `flock DIR/lock cmd` waits for every writer and every writer waits for it;
/// - a shared open-file-description lock on byte 0 for the whole life of the open cache, so
///   that an open can tell whether it is alone (`isAlone`): only then may it cut the newest
///   segment's tail or sweep temporary files, which another process could still be using.
///
/// The file holds the pid of the last process that opened the cache, as text, and is emptied
/// by the last one to close cleanly: an open that finds itself alone and the file not empty
/// knows that a process crashed (`lastCloseWasUnclean`).
///
///     let lock = try DirectoryLock.open(files, io: io, timeout: .seconds(30))
///     try lock.withExclusive { /* one operation */ }
final class DirectoryLock: @unchecked Sendable {
    let descriptor: FileDescriptor
    let path: CachePath
    let io: FileIO
    let root: CachePath
    /// How long `hold` waits for another process; `nil` waits for ever.
    let timeout: Duration?
    /// How many threads of this open hold the flock (it belongs to the open file description,
    /// so one `flock` serves them all; the last `release` unlocks), and whether `close` ran.
    private let holders = Locked((count: 0, closed: false))

    private init(descriptor: FileDescriptor, path: CachePath, io: FileIO, root: CachePath, timeout: Duration?) {
        self.descriptor = descriptor
        self.path = path
        self.io = io
        self.root = root
        self.timeout = timeout
    }

    /// Opens `DIR/lock` and joins the cache's open instances (the shared presence lock). A
    /// directory that is not a cache's is refused first, before the lock file is made in it
    /// (`CacheDirectory.claim`); a cache without `CACHEDIR.TAG` gets one.
    static func open(_ files: CacheFiles, io: FileIO, timeout: Duration?) throws -> DirectoryLock {
        try CacheDirectory.claim(files, io: io)
        let fd = try io.open(files.lock, .readWrite, options: [.create, .noFollow], permissions: io.filePermissions)
        let lock = DirectoryLock(descriptor: fd, path: files.lock, io: io, root: files.root, timeout: timeout)
        // (Two opens may race to write it: the same bytes, renamed into place; a loser is ignored.)
        CacheDirectory.tagIfNeeded(files, io: io)
        return lock
    }

    deinit { close() }

    /// Closes the file, which gives up both locks (idempotent).
    func close() {
        holders.withLock { state in
            guard !state.closed else { return }
            state.closed = true
            io.close(descriptor)
        }
    }

    // MARK: The operation lock

    /// Takes the exclusive flock for this open (at once when another thread of it holds it),
    /// waiting up to `timeout` for other processes; then `inUse` naming the holder's pid.
    func hold() throws {
        try holders.withLock { state in
            if state.closed { throw BlobCacheError.closed }
            if state.count == 0 { try acquire() }
            state.count += 1
        }
    }

    /// Gives back one `hold`; the last one unlocks.
    func release() {
        holders.withLock { state in
            state.count -= 1
            if state.count == 0 && !state.closed { io.system.unlock(descriptor) }
        }
    }

    /// Runs `body` holding the exclusive flock.
    func withExclusive<T>(_ body: () throws -> T) throws -> T {
        try hold()
        defer { release() }
        return try body()
    }

    /// How long a wait for another process yields the processor between attempts before it
    /// sleeps between them (backing off from 50 µs to 1 ms).
    static let yieldingWait = Duration.milliseconds(2)

    private func acquire() throws {
        guard let timeout else { return try lock(wait: true) }
        let clock = ContinuousClock()
        let deadline = clock.now.advanced(by: timeout)
        let spinUntil = clock.now.advanced(by: Self.yieldingWait)
        var pause = Duration.microseconds(50)
        while true {
            do { return try lock(wait: false) } catch BlobCacheError.inUse {}
            let time = clock.now
            guard time < deadline else { break }
            // Most holds last one operation (microseconds): give the processor to the holder
            // (or to anyone) and try again, rather than sleep past the release.
            if time < spinUntil { sched_yield(); continue }
            let rest = deadline - clock.now
            var wait = timespec(tv_sec: 0, tv_nsec: Int(min(pause, rest).components.attoseconds / 1_000_000_000))
            nanosleep(&wait, nil)
            pause = min(pause * 2, .milliseconds(1))
        }
        throw BlobCacheError.inUse(path: root.string, pid: holderPid())
    }

    private func lock(wait: Bool) throws {
        do { try io.system.lockExclusively(descriptor, wait: wait) } catch {
            if error == .wouldBlock { throw BlobCacheError.inUse(path: root.string, pid: nil) }
            throw BlobCacheError.io(operation: "flock", path: path.string, errno: error)
        }
    }

    /// The pid holding the flock: from `/proc/locks` (whoever took it, `flock(1)` included),
    /// else the pid the file holds.
    func holderPid() -> Int32? {
        if let info = try? io.system.status(descriptor), let text = Self.procLocks() {
            let inode = ":\(info.st_ino) "
            for line in String(decoding: text, as: UTF8.self).split(separator: "\n")
            where line.contains(" FLOCK ") && line.contains(" WRITE ") && (line + " ").contains(inode) {
                let fields = line.split(separator: " ")
                if let index = fields.firstIndex(of: "WRITE"), index + 1 < fields.count, let pid = Int32(fields[index + 1]) { return pid }
            }
        }
        return (try? io.read(descriptor, count: 32, at: 0, path: path))
            .flatMap { Int32(String(decoding: $0, as: UTF8.self).trimmingWhitespace()) }
    }

    /// `/proc/locks` (whose size `stat` reports as 0: read until end of file), at most 4 MiB;
    /// `nil` where there is none (not Linux: the pid in the file names the holder).
    private static func procLocks() -> [UInt8]? {
        #if os(Linux)
        guard let fd = try? FileDescriptor.open("/proc/locks", .readOnly) else { return nil }
        defer { try? fd.close() }
        var text: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        while text.count < 1 << 22 {
            guard let count = try? chunk.withUnsafeMutableBytes({ try fd.read(into: $0) }), count > 0 else { break }
            text += chunk[..<count]
        }
        return text
        #else
        return nil
        #endif
    }

    // MARK: Presence

    /// Joins the directory's opens: the shared presence lock, held until `close`. Call with the
    /// flock held, so that no `isAlone` (which takes it exclusively for a moment) runs meanwhile.
    /// Without open-file-description locks (not Linux) an open never counts as alone.
    func joinOpens() {
        try? io.system.lockByte(descriptor, at: Self.presenceByte, .shared)
    }

    /// Whether no other open cache (in any process, this one included) has the directory open.
    /// Call with the flock held, so that no open joins meanwhile.
    var isAlone: Bool {
        guard (try? io.system.lockByte(descriptor, at: Self.presenceByte, .exclusive)) != nil else { return false }
        try? io.system.lockByte(descriptor, at: Self.presenceByte, .shared)
        return true
    }

    private static let presenceByte: Int64 = 0

    // MARK: Maintenance

    /// Runs `body` when no other open cache (in any process) runs maintenance now, and
    /// returns its result; `nil` at once otherwise (that open does the work). The claim is an
    /// open-file-description lock on byte 1, so it goes with a process that dies.
    func ifNoOtherMaintenance<T>(_ body: () throws -> T) rethrows -> T? {
        do throws(Errno) { try io.system.lockByte(descriptor, at: Self.maintenanceByte, .exclusive) } catch {
            // Held by another open. Any other failure (no open-file-description locks: not
            // Linux, an old kernel, some network file systems) must not stop maintenance
            // everywhere: opens then may maintain side by side, which is safe, only wasteful.
            if error == .resourceTemporarilyUnavailable || error == .permissionDenied { return nil }
            return try body()
        }
        defer { try? io.system.lockByte(descriptor, at: Self.maintenanceByte, .unlocked) }
        return try body()
    }

    private static let maintenanceByte: Int64 = 1

    /// Records this process as an opener (its pid in the file); returns whether the file held
    /// one already while this open is alone: a process crashed with the cache open. Call with
    /// the flock held.
    func markOpen(alone: Bool) -> Bool {
        let previous = (try? io.read(descriptor, count: 32, at: 0, path: path)) ?? []
        let pid = Array("\(getpid())\n".utf8)
        try? io.truncate(descriptor, to: 0, path: path)
        try? pid.withUnsafeBytes { try io.writeAll(descriptor, $0, at: 0, path: path) }
        return alone && previous.contains { !Character(UnicodeScalar($0)).isWhitespace }
    }

    /// Empties the file when this is the last open and it closed `cleanly`, telling the next
    /// open that nothing was left half done. Call with the flock held.
    func markClosed(cleanly: Bool) {
        if cleanly && isAlone { try? io.truncate(descriptor, to: 0, path: path) }
    }
}

extension String {
    func trimmingWhitespace() -> String {
        let scalars = unicodeScalars
        guard let first = scalars.firstIndex(where: { !$0.properties.isWhitespace }),
              let last = scalars.lastIndex(where: { !$0.properties.isWhitespace }) else { return "" }
        return String(scalars[first...last])
    }
}
