import BlobCache
import BlobCacheRemote
import Foundation
import Testing

/// `s3://` URLs, object names and addressing, and where credentials come from.
struct S3LocationTests {
    static let id = BlobID(hashing: Array("hello".utf8))   // 5d41402abc4b2a76b9719d911017c592

    @Test("an s3:// URL with every query item, and the defaults without them")
    func parsing() throws {
        let full = try S3Location.parse("s3://my.bucket-1/team/ci/?endpoint=http%3A%2F%2F127.0.0.1:8333&region=eu-west-1&style=path&profile=ci")
        #expect(full == S3Location(bucket: "my.bucket-1", prefix: "team/ci", endpoint: "http://127.0.0.1:8333", region: "eu-west-1",
                                   style: .path, profile: "ci"))
        let bare = try S3Location.parse("s3://cache", environment: ["AWS_DEFAULT_REGION": "ap-south-1"])
        #expect(bare == S3Location(bucket: "cache", prefix: "", endpoint: nil, region: "ap-south-1", style: nil, profile: nil))
        #expect(try S3Location.parse("s3://cache", environment: ["AWS_REGION": "eu-north-1", "AWS_DEFAULT_REGION": "x"]).region == "eu-north-1")
        #expect(try S3Location.parse("s3://cache").region == "us-east-1")
    }

    @Test("a URL S3 would refuse, or that says something twice or unknown, is an invalid URL",
          arguments: ["s3://Upper/x", "s3://ab", "s3://-cache", "s3://cache_1", "s3://cache?style=sideways", "s3://cache?color=red",
                      "s3://cache?region=a&region=b", "s3://cache?region=", "s3://cache?region=us east", "s3:///prefix",
                      "s3://cache/a%0Ab?region=x", "s3://cache/\u{7}", "s3://cache/a/../b", "s3://cache/./b",
                      "s3://cache?endpoint=http://h:0", "s3://cache?endpoint=http://h:70000", "s3://cache?endpoint=http://h%20x",
                      "s3://cache?endpoint=http://u%40h", "s3://cache?endpoint=http://h:"])
    func invalid(url: String) {
        #expect(throws: RemoteStoreError.self) { try RemoteStores.store(url: url) }
    }

    @Test("an endpoint with a path, a user, a fragment, a bad port or another scheme is refused",
          arguments: ["ftp://h", "http://h/path", "http://u:p@h", "http://", "http://h#f", "http://h:0", "http://h:65536", "http://h:x",
                      "http://:80", "http://h\t", "http://[::1]:0"])
    func invalidEndpoint(endpoint: String) {
        #expect(throws: RemoteStoreError.self) { try S3RemoteStore(bucket: "cache", endpoint: endpoint, credentials: nil) }
    }

    @Test("objects: path style on a given endpoint, virtual-host style on AWS's; an empty prefix is the bucket's root")
    func addressing() throws {
        let local = try S3RemoteStore(bucket: "cache", prefix: "/ci/", endpoint: "http://127.0.0.1:8333/", credentials: nil)
        #expect(local.style == .path)
        #expect(local.objectKey(of: .blob(Self.id)) == "ci/5d/41402abc4b2a76b9719d911017c592")
        #expect(local.url(of: .blob(Self.id)) == "http://127.0.0.1:8333/cache/ci/5d/41402abc4b2a76b9719d911017c592")
        let aws = try S3RemoteStore(bucket: "cache", region: "eu-west-1", credentials: nil)
        #expect(aws.style == .virtual)
        #expect(aws.objectKey(of: .key("k")) == "keys/\(RemoteObject.key("k").hex.prefix(2))/\(RemoteObject.key("k").hex.dropFirst(2))")
        #expect(aws.url(of: .blob(Self.id)) == "https://cache.s3.eu-west-1.amazonaws.com/5d/41402abc4b2a76b9719d911017c592")
        let spaced = try S3RemoteStore(bucket: "cache", prefix: "a b+c", endpoint: "http://h:1", style: .virtual, credentials: nil)
        #expect(spaced.url(of: .blob(Self.id)) == "http://cache.h:1/a%20b%2Bc/5d/41402abc4b2a76b9719d911017c592")
    }

    @Test("the description names bucket, endpoint, region and style; nothing printed or dumped shows a secret")
    func description() throws {
        let credentials = AWSCredentials(accessKeyID: "AKID", secretAccessKey: "hunter2", sessionToken: "tok3n")
        let store = try S3RemoteStore(bucket: "cache", prefix: "ci", endpoint: "http://[::1]:1", credentials: credentials)
        #expect(store.description == "s3://cache/ci (http://[::1]:1, us-east-1, path)")
        #expect("\(try S3RemoteStore(bucket: "cache", credentials: nil))" == "s3://cache (https://s3.us-east-1.amazonaws.com, us-east-1, virtual, unsigned)")
        var dumped = ""
        dump(store, to: &dumped)
        dump(credentials, to: &dumped)
        for shown in [dumped, "\(credentials)", String(reflecting: credentials), "\(store)"] {
            #expect(!shown.contains("hunter2") && !shown.contains("tok3n"), "\(shown)")
        }
        #expect("\(credentials)".contains("AKID"))
    }

    @Test("a bucket name with a dot is addressed by path on AWS too: AWS's certificates do not cover it as a host name")
    func dottedBucket() throws {
        let store = try S3RemoteStore(bucket: "my.cache", region: "eu-west-1", credentials: nil)
        #expect(store.style == .path)
        #expect(store.url(of: .blob(Self.id)) == "https://s3.eu-west-1.amazonaws.com/my.cache/5d/41402abc4b2a76b9719d911017c592")
    }

    @Test("a redirect (a bucket in another region) is not followed; the error names S3's code and the bucket's region")
    func redirectNotFollowed() throws {
        let server = try SlowServer("s3-redirect")
        let store = try S3RemoteStore(bucket: "cache", endpoint: "http://127.0.0.1:\(server.port)",
                                      credentials: AWSCredentials(accessKeyID: "AKID", secretAccessKey: "secret"))
        #expect(throws: RemoteStoreError.s3(method: "GET", url: store.url(of: .blob(Self.id)), status: 301,
                                            code: "PermanentRedirect (the bucket is in eu-west-1: give region=eu-west-1)")) {
            try store.get(.blob(Self.id))
        }
    }

    @Test("a password with an unescaped '/', '?' or '#', a port outside 1-65535, a fragment: refused, the password never shown",
          arguments: ["redis://:pa/ss@127.0.0.1:6379/x", "redis://u:pa?ss@127.0.0.1/x", "http://u:pa/ss@cache.internal/c",
                      "http://u:pa#ss@cache.internal/c", "redis://127.0.0.1:70000/x", "redis://127.0.0.1:0/x", "http://h:0/c",
                      "http://cache.internal/c#pass"])
    func refusedAuthority(url: String) {
        #expect {
            try RemoteStores.store(url: url)
        } throws: { error in
            !"\(error)".contains("pa/ss") && !"\(error)".contains("pa?ss") && !"\(error)".contains("pa#ss")
        }
        #expect(!RemoteStores.redacted(url).contains("pa/ss") && !RemoteStores.redacted(url).contains("pa?ss"))
    }

    @Test("credentials: a named profile first, then the environment, then AWS_PROFILE or default in the shared file")
    func credentialOrder() throws {
        let file = NSTemporaryDirectory() + "blobcache-credentials-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: file) }
        try """
            # a comment
            [default]
            aws_access_key_id = DEFAULTKEY
            aws_secret_access_key = default/secret

            [ci]
            ; another comment
            aws_access_key_id=CIKEY
            aws_secret_access_key=ci+secret=
            aws_session_token = token==
            [broken]
            aws_access_key_id = ONLYKEY
            [prod] ; the release pipeline's
            aws_access_key_id = PRODKEY
            aws_secret_access_key = prod-secret
            """.write(toFile: file, atomically: true, encoding: .utf8)
        let environment = ["AWS_SHARED_CREDENTIALS_FILE": file, "AWS_ACCESS_KEY_ID": "ENVKEY", "AWS_SECRET_ACCESS_KEY": "env-secret"]
        #expect(try AWSCredentials.find(profile: "ci", environment: environment)
                == AWSCredentials(accessKeyID: "CIKEY", secretAccessKey: "ci+secret=", sessionToken: "token=="))
        #expect(try AWSCredentials.find(environment: environment) == AWSCredentials(accessKeyID: "ENVKEY", secretAccessKey: "env-secret"))
        #expect(try AWSCredentials.find(environment: environment.merging(["AWS_SESSION_TOKEN": "t"]) { $1 })?.sessionToken == "t")
        #expect(try AWSCredentials.find(environment: ["AWS_SHARED_CREDENTIALS_FILE": file])?.accessKeyID == "DEFAULTKEY")
        #expect(try AWSCredentials.find(environment: ["AWS_SHARED_CREDENTIALS_FILE": file, "AWS_PROFILE": "ci"])?.accessKeyID == "CIKEY")
        #expect(try AWSCredentials.find(environment: ["AWS_SHARED_CREDENTIALS_FILE": "/nonexistent"]) == nil)
        #expect(try AWSCredentials.find(environment: ["HOME": "/nonexistent"]) == nil)
        #expect(throws: AWSCredentials.LookupError.noProfile("nobody", file: file)) {
            try AWSCredentials.find(environment: ["AWS_SHARED_CREDENTIALS_FILE": file, "AWS_PROFILE": "nobody"])
        }
        #expect(throws: AWSCredentials.LookupError.incompleteProfile("broken", file: file)) {
            try AWSCredentials.find(profile: "broken", environment: ["AWS_SHARED_CREDENTIALS_FILE": file])
        }
        #expect(try AWSCredentials.find(profile: "prod", environment: ["AWS_SHARED_CREDENTIALS_FILE": file])?.accessKeyID == "PRODKEY")
        // A byte order mark before the first section, and `~` in the file's path, as editors and shells leave them.
        let folder = NSTemporaryDirectory() + "blobcache-home-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        try Data("\u{FEFF}[default]\r\naws_access_key_id = BOMKEY\r\naws_secret_access_key = s\r\n".utf8)
            .write(to: URL(fileURLWithPath: folder + "/creds"))
        #expect(try AWSCredentials.find(environment: ["AWS_SHARED_CREDENTIALS_FILE": "~/creds", "HOME": folder])?.accessKeyID == "BOMKEY")
        #expect(throws: AWSCredentials.LookupError.incompleteEnvironment) {
            try AWSCredentials.find(environment: ["AWS_ACCESS_KEY_ID": "ENVKEY"])
        }
    }
}
