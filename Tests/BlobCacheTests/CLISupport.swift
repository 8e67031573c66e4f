import Foundation
@testable import BlobCache

/// Runs the built `blobcache` executable and captures what it did.
struct CLI {
    struct Result {
        let status: Int32
        let stdout: Data
        let stderr: String
        var output: String { String(decoding: stdout, as: UTF8.self) }
        var lines: [String] { output.split(separator: "\n").map(String.init) }
    }

    let directory: String

    @discardableResult
    func run(_ arguments: [String], stdin: Data? = nil, environment: [String: String]? = nil, withDir: Bool = true) throws -> Result {
        let process = Process()
        process.executableURL = ChildProcess.productsDirectory.appendingPathComponent("blobcache")
        process.arguments = (withDir ? ["--dir", directory] : []) + arguments
        if let environment { process.environment = environment }
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        // Standard input from a file, not a pipe: a command that exits before reading all of it
        // (a usage error) would otherwise end the test process with SIGPIPE, and no result.
        let inputFile = FileManager.default.temporaryDirectory.appendingPathComponent("blobcache-stdin-\(UUID().uuidString)")
        try (stdin ?? Data()).write(to: inputFile)
        defer { try? FileManager.default.removeItem(at: inputFile) }
        let input = try FileHandle(forReadingFrom: inputFile)
        defer { try? input.close() }
        process.standardInput = input
        try process.run()
        // Read both pipes to the end before waiting, so a large output cannot block the child.
        let errorData = Box()
        let group = DispatchGroup()
        DispatchQueue.global().async(group: group) { errorData.value = err.fileHandleForReading.readDataToEndOfFile() }
        let stdout = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        group.wait()
        return Result(status: process.terminationStatus, stdout: stdout,
                      stderr: String(decoding: errorData.value ?? Data(), as: UTF8.self))
    }

    /// A box the reading thread fills (the group's wait orders the accesses).
    final class Box: @unchecked Sendable {
        private let lock = NSLock()
        private var stored: Data?
        var value: Data? {
            get { lock.withLock { stored } }
            set { lock.withLock { stored = newValue } }
        }
    }
}
