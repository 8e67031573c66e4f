import Foundation

/// A `blobcache serve` child process on loopback, with the port it printed.
final class ServerProcess {
    let process = Process()
    let directory: String
    let logFile: String
    private let output = Pipe()
    private(set) var port = 0

    /// The directory holding the built products (the test bundle sits beside the executables).
    static var productsDirectory: URL {
        URL(fileURLWithPath: (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"))
            ?? CommandLine.arguments[0]).deletingLastPathComponent()
    }

    /// Starts `blobcache serve --dir directory --listen 127.0.0.1:0 extra…` and waits for its
    /// "listening on" line (no sleeping: the line is printed once the socket listens).
    init(directory: String, extra: [String] = []) throws {
        self.directory = directory
        logFile = directory + ".serve.log"
        _ = FileManager.default.createFile(atPath: logFile, contents: nil)
        process.executableURL = Self.productsDirectory.appendingPathComponent("blobcache")
        process.arguments = ["serve", "--dir", directory, "--listen", "127.0.0.1:0"] + extra
        process.standardOutput = output
        process.standardError = FileHandle(forWritingAtPath: logFile)
        process.standardInput = FileHandle.nullDevice
        try process.run()
        guard let line = readLine() else {
            throw Failure("blobcache serve exited before listening: \(log)")
        }
        let prefix = "blobcache serve: listening on "
        let address = line.dropFirst(prefix.count)
        guard line.hasPrefix(prefix), let scheme = address.firstRange(of: "://127.0.0.1:"),
              let port = Int(address[scheme.upperBound...]) else {
            throw Failure("unexpected first line: \(line)")
        }
        self.scheme = String(address[..<scheme.lowerBound])
        self.port = port
    }

    /// `http` or `https`.
    private(set) var scheme = "http"

    var url: String { "\(scheme)://127.0.0.1:\(port)" }

    /// What the server wrote on standard error.
    var log: String { (try? String(contentsOfFile: logFile, encoding: .utf8)) ?? "" }

    /// Sends SIGTERM and returns the exit status.
    func terminate() -> Int32 {
        kill(process.processIdentifier, SIGTERM)
        process.waitUntilExit()
        return process.terminationStatus
    }

    /// Kills the server if it still runs and removes its log.
    deinit {
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
        try? FileManager.default.removeItem(atPath: logFile)
    }

    private var buffer: [UInt8] = []

    /// The next line of standard output, or nil at its end.
    private func readLine() -> String? {
        while true {
            if let newline = buffer.firstIndex(of: UInt8(ascii: "\n")) {
                let line = String(decoding: buffer[..<newline], as: UTF8.self)
                buffer.removeSubrange(...newline)
                return line
            }
            let chunk = output.fileHandleForReading.availableData
            if chunk.isEmpty { return nil }
            buffer.append(contentsOf: chunk)
        }
    }
}

/// A test failure with a message.
struct Failure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// Child processes the tests run (curl, ccache, gcc) and temporary directories.
enum Run {
    /// Whether `program` is on PATH (tests needing it are skipped otherwise).
    static func installed(_ program: String) -> Bool {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        return path.split(separator: ":").contains { FileManager.default.isExecutableFile(atPath: "\($0)/\(program)") }
    }

    /// Starts `program` (found on PATH) with `arguments`; standard output to a pipe the caller reads.
    static func start(_ program: String, _ arguments: [String], environment: [String: String]? = nil,
                      directory: String? = nil) throws -> (Process, Pipe) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = [program] + arguments
        if let environment { process.environment = environment }
        if let directory { process.currentDirectoryURL = URL(fileURLWithPath: directory) }
        let out = Pipe()
        process.standardOutput = out
        process.standardError = out
        process.standardInput = FileHandle.nullDevice
        try process.run()
        return (process, out)
    }

    /// Runs `program` to its end: exit status and combined output.
    @discardableResult
    static func run(_ program: String, _ arguments: [String], environment: [String: String]? = nil,
                    directory: String? = nil) throws -> (status: Int32, output: String) {
        let (process, out) = try start(program, arguments, environment: environment, directory: directory)
        let data = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: data, as: UTF8.self))
    }

}

/// A new empty temporary directory, removed with everything in it when the last reference goes.
final class ScratchDirectory {
    let path: String

    init(_ name: String) throws {
        path = NSTemporaryDirectory() + "blobcache-serve-\(name)-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(atPath: path) }
}
