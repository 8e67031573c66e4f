#if BLOBCACHE_NETWORK
import ArgumentParser
import BlobCacheServer
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// `blobcache credential`: one line for `serve --auth-file`.
struct Credential: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print one line for 'serve --auth-file': a user's password (basic) or a bearer token, hashed.",
        discussion: """
            Reads the secret from the first line of standard input, so it never appears in the \
            process list or the shell's history, and prints the line to append to the auth file:

              printf '%s\\n' "$PASSWORD" | blobcache credential basic alice --access read-write >> credentials
              openssl rand -hex 32 | tee token | blobcache credential bearer ci --access read >> credentials
              chmod 600 credentials

            A password is kept as PBKDF2-HMAC-SHA256 with a random salt; a token (at least 24 \
            characters: make it random) as its SHA-256. Exit codes: 0 printed; 2 no secret on \
            standard input, or a token too short; 64 usage.
            """)

    @Argument(help: ArgumentHelp("basic (HTTP Basic: a user and password) or bearer (a token).", valueName: "basic|bearer"))
    var scheme: String

    @Argument(help: ArgumentHelp("The user name (basic) or a name for the token (bearer; shown in the access log).", valueName: "NAME"))
    var name: String

    @Option(help: ArgumentHelp("read: GET, HEAD, PROPFIND, /status, /metrics; read-write: also PUT and DELETE.", valueName: "read|read-write"))
    var access = "read"

    func run() throws {
        guard let scheme = Credentials.Entry.Scheme(rawValue: scheme) else {
            Failure.say("'\(self.scheme)' is neither basic nor bearer")
            throw ExitCode.validationFailure
        }
        guard let access = Access(rawValue: access) else {
            Failure.say("--access is read or read-write, not '\(access)'")
            throw ExitCode.validationFailure
        }
        guard let secret = Swift.readLine(strippingNewline: true), !secret.isEmpty else {
            Failure.say("no secret on standard input: pipe the password or token in, on one line")
            throw ExitCode(Failure.error)
        }
        do {
            let line = try Credentials.line(scheme: scheme, name: name, secret: secret, access: access)
            try Streams.writeStandardOutput(line + "\n")
        } catch let error as CredentialsError {
            Failure.say("\(error)")
            throw ExitCode(Failure.error)
        } catch {
            Failure.say("cannot hash the secret: \(error)")
            throw ExitCode(Failure.error)
        }
    }
}
#endif
