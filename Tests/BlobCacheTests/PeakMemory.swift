import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Runs the `blobcache` tool with `-v` and reads its peak resident memory from the line it
/// prints at exit (its own `VmHWM`, from `/proc/self/status`). Not `wait4`'s `ru_maxrss`: a
/// child started with `posix_spawn` (a vfork) is charged the test process's own peak at its exec.
///
///     let run = try PeakMemory.run(cliPath, ["put", "big", file], stdin: "/dev/null", stdout: "/dev/null")
///     #expect(run.peakBytes <= 64 << 20)
enum PeakMemory {
    struct Outcome {
        let status: Int32
        let peakBytes: Int
        let stderr: String
    }

    /// Whether peak memory means anything in this run: AddressSanitizer's shadow memory does
    /// not count the program's own.
    static var measurable: Bool { ProcessInfo.processInfo.environment["BLOBCACHE_SANITIZER"] == nil }

    static func run(_ executable: String, _ arguments: [String], stdin: String = "/dev/null",
                    stdout: String = "/dev/null") throws -> Outcome {
        let errorPath = FileManager.default.temporaryDirectory.appendingPathComponent("peak-\(UUID().uuidString)").path
        defer { unlink(errorPath) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, stdin, O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, stdout, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_addopen(&actions, 2, errorPath, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        let argv = ([executable, "-v"] + arguments).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, executable, &actions, nil, argv, environ)
        guard spawned == 0 else { throw POSIXError(POSIXErrorCode(rawValue: spawned) ?? .EIO) }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 {
            guard errno == EINTR else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        }
        let exit = (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
        let all = (try? String(contentsOfFile: errorPath, encoding: .utf8)) ?? ""
        let lines = all.split(separator: "\n").map(String.init)
        let marker = "blobcache: debug: peak resident memory "
        let peak = lines.last { $0.hasPrefix(marker) }.flatMap { Int($0.dropFirst(marker.count).split(separator: " ").first ?? "") }
        // The command's own lines, without -v's debug lines.
        let stderr = lines.filter { !$0.hasPrefix("blobcache: debug: ") }.map { $0 + "\n" }.joined()
        return Outcome(status: exit, peakBytes: peak ?? .max, stderr: stderr)
    }
}
