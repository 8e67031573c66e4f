/// The `AUTH` arguments of a store's connections: an ACL user (or none) and a password. Its
/// description, debug description and mirror (what `print`, `debugPrint` and `dump` show, for
/// it and for anything holding it) give the user and hide the password.
///
///     let credentials = RedisCredentials(user: "ci", password: secret)   // "\(credentials)" == "ci:***"
struct RedisCredentials: Sendable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    let user: String?
    let password: String

    var description: String { "\(user ?? ""):***" }
    var debugDescription: String { description }
    var customMirror: Mirror { Mirror(self, children: ["user": user as Any, "password": "***"], displayStyle: .struct) }
}
