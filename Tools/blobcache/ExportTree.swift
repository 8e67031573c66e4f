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
/// (`O_NOFOLLOW`), so a link planted in the destination cannot lead a write outside it. The
/// keys go out in batches of one directory's files (`ExportBatch`): a directory is opened (and
/// made) once per batch rather than once per file.
final class ExportWriter: @unchecked Sendable {
    /// What happened to one key.
    enum Outcome: Sendable {
        case written
        case gone                 // expired or removed meanwhile
        case failed(String)
        case notTaken             // the export stopped first (`stopped`)
    }

    /// The key whose failure stopped the export, and why, when one did (`ExportError.stopsExport`).
    var stopped: (key: String, reason: String)? { stop.withLock { $0 } }

    private let root: Int32
    private let stop = Mutex<(key: String, reason: String)?>(nil)
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

    /// Exports every key, each core taking the next batch nobody has taken; the outcomes are
    /// in `keys`' order. A full or read-only destination stops every core before its next key
    /// (`stopped`); the keys not written then are `notTaken`.
    func export(_ keys: [String]) -> [Outcome] {
        let batches = ExportBatch.batches(of: keys)
        let next = Atomic<Int>(0)
        let outcomes = UnsafeMutableBufferPointer<Outcome>.allocate(capacity: keys.count)
        outcomes.initialize(repeating: .notTaken)
        defer {
            outcomes.deinitialize()   // the outcomes' strings: released, not leaked
            outcomes.deallocate()
        }
        let shared = Outcomes(outcomes)
        let workers = min(max(1, ProcessInfo.processInfo.activeProcessorCount), max(1, batches.count))
        DispatchQueue.concurrentPerform(iterations: workers) { _ in
            while !self.isStopped, case let index = next.wrappingAdd(1, ordering: .relaxed).oldValue, index < batches.count {
                self.export(batches[index], of: keys, into: shared)
            }
        }
        return Array(outcomes)
    }

    /// Writes one batch's files. Each value is opened before its directory, so a key whose
    /// value is gone or damaged leaves no directory behind; the directory is opened at the
    /// first value there is to write, and its failure is every later file's.
    private func export(_ batch: ExportBatch, of keys: [String], into outcomes: Outcomes) {
        var directory: Result<Int32, ExportError>?
        defer { if case .success(let fd)? = directory, fd != root { close(fd) } }
        for (index, name) in batch.files where !isStopped {
            let reader: ValueReader?
            do { reader = try value(keys[index]) } catch {
                outcomes.buffer[index] = .failed("\(error)")
                continue
            }
            guard let reader else {
                outcomes.buffer[index] = .gone
                continue
            }
            if directory == nil { directory = Result { () throws(ExportError) in try openPath(batch.directory) } }
            do {
                try ExportFile.store(reader, named: name, in: directory!.get())
                outcomes.buffer[index] = .written
            } catch let error as BlobCacheError {
                outcomes.buffer[index] = .failed("\(error)")
            } catch let error as ExportError where error.stopsExport {
                reader.close()
                stop.withLock { if $0 == nil { $0 = (keys[index], "cannot write it: \(error)") } }
            } catch {
                reader.close()
                outcomes.buffer[index] = .failed("cannot write it: \(error)")
            }
        }
    }

    private var isStopped: Bool { stop.withLock { $0 != nil } }

    /// The directory at `components` below the destination, each made when missing; never
    /// through a symbolic link.
    private func openPath(_ components: [String]) throws(ExportError) -> Int32 {
        var directory = root
        for component in components {
            let next: Int32
            do { next = try openDirectory(component, in: directory) } catch {
                if directory != root { close(directory) }
                throw error
            }
            if directory != root { close(directory) }
            directory = next
        }
        return directory
    }

    /// The directory `name` in `parent`, made when missing; never a symbolic link.
    private func openDirectory(_ name: String, in parent: Int32) throws(ExportError) -> Int32 {
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
    /// The system's error number, when the reason is one.
    var code: Int32? = nil
    init(_ description: String, code: Int32? = nil) {
        self.description = description
        self.code = code
    }

    static func fromErrno(_ name: String) -> ExportError {
        let code = errno
        let reason = code == ELOOP ? "'\(name)' is a symbolic link" : String(cString: strerror(code))
        return ExportError(reason, code: code)
    }

    /// Whether every later file would fail the same way: the destination is full (space or
    /// quota) or read-only, so going on would only repeat the reason once per key.
    var stopsExport: Bool { code == ENOSPC || code == EDQUOT || code == EROFS }
}
