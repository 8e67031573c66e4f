import Foundation
import Testing

/// `blobcache --remote URL` and `blobcache remote check` against real servers.
@Suite(.serialized)
struct RemoteCLITests {
    @Test("put with --remote in one directory, get with --remote in another", .enabled(if: RemoteTierTests.haveNginx, "nginx is not installed"))
    func putAndGetThroughNginx() throws {
        let nginx = try LoopbackServer.nginx()
        let scratch = Scratch()
        let file = scratch.sub("value")
        let value = RemoteTierTests.random(50_000, seed: 11)
        try Data(value).write(to: URL(fileURLWithPath: file))
        let put = try runProgram(blobcacheTool, ["--remote", nginx.httpURL + "/cli", "--dir", scratch.sub("a"), "put", "k", file])
        #expect(put.status == 0, "\(put.error)")
        let get = try runProgram(blobcacheTool, ["--dir", scratch.sub("b"), "get", "k", "-o", scratch.sub("out"), "--remote", nginx.httpURL + "/cli"])
        #expect(get.status == 0, "\(get.error)")
        #expect(try [UInt8](Data(contentsOf: URL(fileURLWithPath: scratch.sub("out")))) == value)
        // Written back: without the remote, the second directory has it.
        let local = try runProgram(blobcacheTool, ["--dir", scratch.sub("b"), "stat", "--json"])
        #expect(local.output.contains("\"entries\":1"), "\(local.output)")
    }

    @Test("remote check: 0 and one line when the round trip works, for nginx and Redis",
          .enabled(if: RemoteTierTests.haveNginx && RemoteTierTests.haveRedis, "nginx or redis-server is not installed"))
    func checkReachable() throws {
        let nginx = try LoopbackServer.nginx(), redis = try LoopbackServer.redis()
        let scratch = Scratch()
        for url in [nginx.httpURL + "/check", "redis://127.0.0.1:\(redis.port)/check"] {
            let result = try runProgram(blobcacheTool, ["--dir", scratch.path, "--remote", url, "remote", "check"])
            #expect(result.status == 0, "\(result.error)")
            #expect(result.output.hasPrefix("remote ok: "), "\(result.output)")
            let json = try runProgram(blobcacheTool, ["--dir", scratch.path, "remote", "check", "--remote", url, "--json"])
            let object = try JSONSerialization.jsonObject(with: Data(json.output.utf8)) as? [String: Any]
            #expect(object?["ok"] as? Bool == true)
        }
        // The probe is gone afterwards.
        let keys = try runProgram(LoopbackServer.redisCLIPath!, ["-p", "\(redis.port)", "--scan"]).output
        #expect(keys.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty, "\(keys)")
    }

    @Test("remote check: exit 2 and one line when nothing listens; 64 for a bad URL or none",
          .enabled(if: RemoteTierTests.haveRedis, "redis-server is not installed"))
    func checkUnreachable() throws {
        let redis = try LoopbackServer.redis()
        redis.stop()
        let scratch = Scratch()
        let down = try runProgram(blobcacheTool, ["--dir", scratch.path, "--remote", "redis://127.0.0.1:\(redis.port)/x", "remote", "check"])
        #expect(down.status == 2)
        #expect(down.error.hasPrefix("blobcache: remote check failed: "), "\(down.error)")
        #expect(down.error.split(separator: "\n").count == 1)
        let bad = try runProgram(blobcacheTool, ["--dir", scratch.path, "--remote", "ftp://host/x", "remote", "check"])
        #expect(bad.status == 64, "\(bad.error)")
        let none = try runProgram(blobcacheTool, ["--dir", scratch.path, "remote", "check"])
        #expect(none.status == 64, "\(none.error)")
    }

    @Test("a remote that is down: the put succeeds, with one warning line on standard error; -q keeps it quiet")
    func remoteWarnings() throws {
        let scratch = Scratch()
        let file = scratch.sub("value")
        try Data("v".utf8).write(to: URL(fileURLWithPath: file))
        // Port 1 on loopback: nothing listens, so every call is refused at once.
        let remote = ["--remote", "redis://127.0.0.1:1/down", "--dir", scratch.sub("a")]
        let put = try runProgram(blobcacheTool, remote + ["put", "k", file])
        #expect(put.status == 0)
        let warnings = put.error.split(separator: "\n")
        #expect(warnings.count == 1 && warnings[0].hasPrefix("blobcache: warning: remote store failed"), "\(put.error)")
        let quiet = try runProgram(blobcacheTool, ["-q"] + remote + ["put", "k2", file])
        #expect(quiet.status == 0 && quiet.error.isEmpty)
        let miss = try runProgram(blobcacheTool, remote + ["get", "absent"])
        #expect(miss.status == 1 && miss.error.split(separator: "\n").count == 2, "one warning and the miss: \(miss.error)")
    }
}
