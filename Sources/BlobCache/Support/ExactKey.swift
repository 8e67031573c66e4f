/// A key compared and hashed by its UTF-8 bytes. Swift's `String` equality is canonical
/// equivalence, so `"\u{E9}" == "e\u{301}"`: a `[String: …]` table would take two keys the
/// index keeps apart for one. Every table keyed by a cache key uses this instead.
///
///     var waiting: [ExactKey: Int] = [:]
///     waiting[ExactKey("\u{E9}")] = 1   // "e\u{301}" is another key
struct ExactKey: Hashable, Sendable {
    let key: String

    init(_ key: String) { self.key = key }

    static func == (lhs: Self, rhs: Self) -> Bool { lhs.key.utf8.elementsEqual(rhs.key.utf8) }

    func hash(into hasher: inout Hasher) {
        var key = key
        key.withUTF8 { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
    }
}
