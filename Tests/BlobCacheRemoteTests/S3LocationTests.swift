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
                      "s3://cache/a%0Ab?region=x", "s3://cache/\u{7}"])
    func invalid(url: String) {
        #expect(throws: RemoteStoreError.self) { try RemoteStores.store(url: url) }
    }

    @Test("an endpoint with a path, a user or another scheme is refused", arguments: ["ftp://h", "http://h/path", "http://u:p@h", "http://"])
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

    @Test("the description names bucket, endpoint, region and style, never a secret")
    func description() throws {
        let store = try S3RemoteStore(bucket: "cache", prefix: "ci", endpoint: "http://h:1",
                                      credentials: AWSCredentials(accessKeyID: "AKID", secretAccessKey: "hunter2", sessionToken: "tok"))
        #expect(store.description == "s3://cache/ci (http://h:1, us-east-1, path)")
        #expect(!store.description.contains("hunter2"))
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
        #expect(throws: AWSCredentials.LookupError.incompleteEnvironment) {
            try AWSCredentials.find(environment: ["AWS_ACCESS_KEY_ID": "ENVKEY"])
        }
    }
}
