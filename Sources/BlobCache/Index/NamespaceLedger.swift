/// What each namespace holds: entries, and the distinct blobs its entries use (each counted
/// once per namespace however many of its keys share it), kept up to date by every change to
/// the index (operations, replay, snapshot restore), so a namespace's byte cap costs O(1).
///
/// A namespaced entry's key is `"\0/" + name + "\0" + key` (`NamespaceKey`): no key of the
/// cache's own can start with U+0000, and a name holds none.
struct NamespaceLedger {
    /// One namespace's figures.
    struct Usage: Equatable {
        /// Its entries.
        var entries = 0
        /// Bytes its distinct blobs take on disk, headers included.
        var storedBytes = 0
        /// Bytes of its distinct values.
        var logicalBytes = 0
        /// References from its entries, by blob slot.
        var references: [Int32: Int32] = [:]
    }

    /// By the namespace's key prefix (`NamespaceKey.prefix(of:)`), as bytes: names are told
    /// apart byte by byte, as keys are (`String` would merge canonically equivalent names).
    private(set) var usage: [[UInt8]: Usage] = [:]

    /// Counts an entry of the namespace with key prefix `prefix` using the blob in `slot`.
    mutating func add(prefix: [UInt8], blobSlot slot: Int32, footprint: Int, rawLength: Int) {
        usage[prefix, default: Usage()].entries += 1
        let references = usage[prefix]!.references[slot, default: 0] + 1
        usage[prefix]!.references[slot] = references
        if references == 1 {
            usage[prefix]!.storedBytes += footprint
            usage[prefix]!.logicalBytes += rawLength
        }
    }

    /// Forgets an entry that `add` counted.
    mutating func remove(prefix: [UInt8], blobSlot slot: Int32, footprint: Int, rawLength: Int) {
        // Changed in place: a copy of the usage would copy its reference table at every removal.
        guard usage[prefix] != nil else { return }
        usage[prefix]!.entries -= 1
        let references = (usage[prefix]!.references[slot] ?? 1) - 1
        usage[prefix]!.references[slot] = references == 0 ? nil : references
        if references == 0 {
            usage[prefix]!.storedBytes -= footprint
            usage[prefix]!.logicalBytes -= rawLength
        }
        if usage[prefix]!.entries == 0 { usage[prefix] = nil }
    }

    /// Accounts a blob rewritten with another size (recompression) in every namespace using it.
    mutating func blobResized(slot: Int32, by delta: Int) {
        guard delta != 0 else { return }
        for prefix in usage.keys where usage[prefix]!.references[slot] != nil {
            usage[prefix]!.storedBytes += delta
        }
    }
}

/// How a namespace's keys are kept among the cache's: `"\0/" + name + "\0" + key`.
enum NamespaceKey {
    /// The longest name, in bytes of UTF-8.
    static let maxNameBytes = 255

    /// The prefix of every raw key of namespace `name`, as bytes.
    static func prefix(of name: String) -> [UInt8] { [0, UInt8(ascii: "/")] + Array(name.utf8) + [0] }

    /// The namespace prefix a raw key starts with; `nil` for keys of no namespace.
    static func prefix(ofRaw key: UnsafeRawBufferPointer) -> [UInt8]? {
        guard key.count > 3, key[0] == 0, key[1] == UInt8(ascii: "/") else { return nil }
        guard let end = key[2...].firstIndex(of: 0) else { return nil }
        return Array(key[..<(end + 1)])
    }

    /// The namespace prefix of a raw key; `nil` for keys of no namespace.
    static func prefix(ofRawKey key: String) -> [UInt8]? {
        guard key.utf8.first == 0 else { return nil }
        var key = key
        return key.withUTF8 { prefix(ofRaw: UnsafeRawBufferPointer($0)) }
    }

    /// The name in a prefix made by `prefix(of:)`.
    static func name(ofPrefix prefix: [UInt8]) -> String {
        String(decoding: prefix.dropFirst(2).dropLast(), as: UTF8.self)
    }
}
