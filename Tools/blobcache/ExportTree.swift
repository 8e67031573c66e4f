import BlobCache
import Dispatch
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Which keys `export` writes and which it refuses, decided before anything is written, so the
/// outcome does not depend on the order the cores take the keys in.
struct ExportPlan {
    /// Keys to write, sorted.
    var accepted: [String] = []
    /// Keys refused, sorted, with why.
    var refused: [(key: String, reason: String)] = []

    init(keys: [String], destination: String) {
        // By bytes: `String` equality would take two canonically equivalent keys for one.
        let all = Set(keys.map { Array($0.utf8) })
        for key in keys.sorted() {
            if !Export.isSafe(key) {
                refused.append((key, "it would escape \(destination) or is not a file name"))
            } else if let file = Self.keyFileAbove(key, in: all) {
                refused.append((key, "it would be under the file of key '\(BlobCache.escapedKey(file))'"))
            } else {
                accepted.append(key)
            }
        }
    }

    /// A key that is a directory of `key`'s path (`a` for `a/b`), if any: its file is there.
    private static func keyFileAbove(_ key: String, in keys: Set<[UInt8]>) -> String? {
        var prefix: [UInt8] = []
        for component in key.utf8.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false).dropLast() {
            if !prefix.isEmpty { prefix.append(UInt8(ascii: "/")) }
            prefix += component
            if keys.contains(prefix) { return String(decoding: prefix, as: UTF8.self) }
        }
        return nil
    }
}

/// Writes values out as files under one directory, on every core. Every path is opened one
/// component at a time from the destination's descriptor, never through a symbolic link
/// (`O_NOFOLLOW`), so a link planted in the destination cannot lead a write outside it.
final class ExportWriter: @unchecked Sendable {
    /// What happened to one key.
    enum Outcome: Sendable {
        case written
        case gone                 // expired or removed meanwhile
        case failed(String)
    }

    private let root: Int32
    private let value: @Sendable (String) throws -> ValueReader?

    /// Opens (creating it when missing) the destination; `value` opens a key's value for reading.
    init(destination: String, value: @escaping @Sendable (String) throws -> ValueReader?) throws {
        try Self.makeDirectories(destination)
        root = open(destination, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard root >= 0 else { throw ExportError("cannot open \(destination): \(String(cString: strerror(errno)))") }
        self.value = value
    }

    deinit { close(root) }

    /// `mkdir -p`: every missing directory of `path`, 0777 less the umask; one that exists is
    /// fine, anything else there (a file) is the system's reason in one line.
    static func makeDirectories(_ path: String) throws {
        var prefix = path.hasPrefix("/") ? "/" : ""
        for component in path.split(separator: "/") {
            prefix += (prefix.isEmpty || prefix.hasSuffix("/") ? "" : "/") + component
            if mkdir(prefix, 0o777) != 0 && errno != EEXIST {
                throw ExportError("cannot create \(prefix): \(String(cString: strerror(errno)))")
            }
        }
        var info = stat()
        guard stat(path, &info) == 0, info.st_mode & S_IFMT == S_IFDIR else {
            throw ExportError("cannot export into \(path): it is not a directory")
        }
    }

    /// Exports every key, each core taking the next key nobody has taken; the outcomes are in
    /// `keys`' order.
    func export(_ keys: [String]) -> [Outcome] {
        let next = Atomic<Int>(0)
        let outcomes = UnsafeMutableBufferPointer<Outcome>.allocate(capacity: keys.count)
        outcomes.initialize(repeating: .gone)
        defer {
            outcomes.deinitialize()   // the outcomes' strings: released, not leaked
            outcomes.deallocate()
        }
        let shared = Outcomes(outcomes)
        DispatchQueue.concurrentPerform(iterations: max(1, ProcessInfo.processInfo.activeProcessorCount)) { _ in
            while case let index = next.wrappingAdd(1, ordering: .relaxed).oldValue, index < keys.count {
                shared.buffer[index] = self.exportOne(keys[index])
            }
        }
        return Array(outcomes)
    }

    private func exportOne(_ key: String) -> Outcome {
        let reader: ValueReader?
        do { reader = try value(key) } catch { return .failed("\(error)") }
        guard let reader else { return .gone }
        do {
            try store(reader, at: key)
            return .written
        } catch let error as BlobCacheError {
            return .failed("\(error)")
        } catch {
            return .failed("cannot write it: \(error)")
        }
    }

    /// Writes the value `reader` reads to `relative` (components already checked: no `.`, `..`
    /// or empty one), a checked piece at a time; a value that turns out damaged part way, or a
    /// failed write, leaves the destination as it was.
    private func store(_ reader: ValueReader, at relative: String) throws {
        // Split at every `/` byte, as `Export.isSafe` judged it: a `/` followed by a combining
        // mark is one `Character`, and a component holding it would reach `openat` with a `/`
        // inside, which follows whatever link is on the way.
        var components = relative.utf8.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false)
            .map { String(decoding: $0, as: UTF8.self) }
        let name = components.removeLast()
        var directory = root
        defer { if directory != root { close(directory) } }
        for component in components {
            let next = try openDirectory(component, in: directory)
            if directory != root { close(directory) }
            directory = next
        }
        // A symbolic link where the file goes is never followed, nor replaced.
        var existing = stat()
        if fstatat(directory, name, &existing, AT_SYMLINK_NOFOLLOW) == 0, existing.st_mode & S_IFMT == S_IFLNK {
            errno = ELOOP
            throw ExportError.fromErrno(name)
        }
        // Written under a temporary name beside it and renamed into place once whole: a value
        // found damaged part way, or a failed write, leaves what was there before.
        let temporary = ".\(name).blobcache-export-\(UInt64.random(in: 0 ... .max) & 0xffff_ffff)"
        let fd = openat(directory, temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0o666)
        guard fd >= 0 else { throw ExportError.fromErrno(name) }
        do {
            defer { close(fd) }
            try reader.forEachChunk { chunk in
                var done = 0
                while done < chunk.count {
                    let n = write(fd, chunk.baseAddress! + done, chunk.count - done)
                    if n < 0 {
                        if errno == EINTR { continue }
                        throw ExportError.fromErrno(name)
                    }
                    done += n
                }
            }
            guard renameat(directory, temporary, directory, name) == 0 else { throw ExportError.fromErrno(name) }
        } catch {
            unlinkat(directory, temporary, 0)
            throw error
        }
    }

    /// The directory `name` in `parent`, made when missing; never a symbolic link.
    private func openDirectory(_ name: String, in parent: Int32) throws -> Int32 {
        for _ in 0..<2 {
            let fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
            if fd >= 0 { return fd }
            guard errno == ENOENT else { throw ExportError.fromErrno(name) }
            // Another core may make it first: EEXIST is as good.
            if mkdirat(parent, name, 0o777) != 0 && errno != EEXIST { throw ExportError.fromErrno(name) }
        }
        throw ExportError("\(name) keeps vanishing")
    }

    /// The outcomes, written by the cores at disjoint indices.
    private final class Outcomes: @unchecked Sendable {
        let buffer: UnsafeMutableBufferPointer<Outcome>
        init(_ buffer: UnsafeMutableBufferPointer<Outcome>) { self.buffer = buffer }
    }
}

/// Why a file could not be written.
struct ExportError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }

    static func fromErrno(_ name: String) -> ExportError {
        let code = errno
        let reason = code == ELOOP ? "'\(name)' is a symbolic link" : String(cString: strerror(code))
        return ExportError(reason)
    }
}
