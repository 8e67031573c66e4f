import Foundation

/// The crash writer (`blobcache-crash-writer`) run as a child process, read line by line.
final class ChildProcess {
    let process = Process()
    private let output = Pipe()
    private let input = Pipe()
    private var buffer: [UInt8] = []

    /// The directory holding the built products (the test bundle sits beside the executables).
    static var productsDirectory: URL {
        URL(fileURLWithPath: (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"))
            ?? CommandLine.arguments[0]).deletingLastPathComponent()
    }

    init(executable: String = "blobcache-crash-writer", arguments: [String]) throws {
        process.executableURL = Self.productsDirectory.appendingPathComponent(executable)
        process.arguments = arguments
        process.standardOutput = output
        process.standardInput = input
        process.standardError = FileHandle.nullDevice
        try process.run()
    }

    var pid: Int32 { process.processIdentifier }

    /// The next line of output, or `nil` at end of output.
    func readLine() -> String? {
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

    func closeInput() { try? input.fileHandleForWriting.close() }

    func kill() { Foundation.kill(process.processIdentifier, SIGKILL) }

    @discardableResult
    func wait() -> Int32 {
        process.waitUntilExit()
        return process.terminationStatus
    }
}
