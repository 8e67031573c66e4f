import Foundation
import Testing

/// ccache (Debian's 4.8) with `blobcache serve` as its HTTP remote storage: a small C project
/// built twice, the local cache cleared in between; every second compilation must be a remote hit.
@Suite(.serialized)
struct ServeCcacheTests {
    static let toolsInstalled = Run.installed("ccache") && Run.installed("gcc")

    /// ccache's `--print-stats` (tab-separated `name value` lines) as a dictionary.
    private func statistics(_ environment: [String: String]) throws -> [String: Int] {
        let result = try Run.run("ccache", ["--print-stats"], environment: environment)
        var figures: [String: Int] = [:]
        for line in result.output.split(separator: "\n") {
            let fields = line.split(separator: "\t")
            if fields.count == 2, let value = Int(fields[1]) { figures[String(fields[0])] = value }
        }
        return figures
    }

    @Test("ccache: a second build from an emptied local cache is all remote hits",
          .enabled(if: toolsInstalled, "ccache or gcc is not installed"),
          arguments: ["subdirs", "flat", "bazel"], [false, true])
    func secondBuildHitsRemote(layout: String, basicAuth: Bool) throws {
        let scratch = try ScratchDirectory("ccache-\(layout)")
        let root = scratch.path
        // With --auth-file, ccache sends the URL's user and password as HTTP Basic.
        let server = try ServerProcess(directory: root + "/blobcache",
                                       extra: basicAuth ? ["--auth-file", try ServeAccessTests.authFile(in: root)] : [])
        let userinfo = basicAuth ? "alice:alice-pass@" : ""
        let project = root + "/project"
        try FileManager.default.createDirectory(atPath: project, withIntermediateDirectories: true)
        let sources = ["alpha", "beta", "gamma", "delta"]
        for (index, name) in sources.enumerated() {
            let source = """
                #include <stdio.h>
                int \(name)(int x) { return x * \(index + 2) + \(index); }
                void \(name)_print(void) { printf("%s %d\\n", "\(name)", \(name)(\(index))); }

                """
            try source.write(toFile: "\(project)/\(name).c", atomically: true, encoding: .utf8)
        }
        try "".write(toFile: root + "/ccache.conf", atomically: true, encoding: .utf8)
        var environment = ProcessInfo.processInfo.environment
        environment["CCACHE_DIR"] = root + "/ccache"
        environment["CCACHE_CONFIGPATH"] = root + "/ccache.conf"
        environment["CCACHE_REMOTE_STORAGE"] = "http://\(userinfo)127.0.0.1:\(server.port)/|layout=\(layout)"

        func build() throws {
            for name in sources {
                let result = try Run.run("ccache", ["gcc", "-O1", "-c", "\(name).c", "-o", "\(name).o"],
                                         environment: environment, directory: project)
                #expect(result.status == 0, "\(result.output)")
            }
        }

        try Run.run("ccache", ["-z"], environment: environment)
        try build()
        let first = try statistics(environment)
        #expect((first["remote_storage_write"] ?? 0) >= sources.count, "\(first)")
        #expect(first["remote_storage_error"] == 0, "\(first)")

        let cleared = try Run.run("ccache", ["-C"], environment: environment)
        #expect(cleared.status == 0, "\(cleared.output)")
        try Run.run("ccache", ["-z"], environment: environment)
        try build()
        let second = try statistics(environment)
        let summary = try Run.run("ccache", ["-s"], environment: environment)
        print("ccache -s after the second build (layout=\(layout), Basic auth \(basicAuth)):\n\(summary.output)")
        #expect(second["remote_storage_hit"] == sources.count, "\(second)")
        #expect(second["local_storage_hit"] == 0, "\(second)")
        #expect(second["cache_miss"] == 0, "\(second)")
        #expect(second["remote_storage_error"] == 0, "\(second)")
        #expect(server.terminate() == 0, "\(server.log)")
    }
}
