import Testing
@testable import BlobCache

@Suite("Deferred tail")
struct DeferredTailTests {
    private func entry(_ key: String, value: Int) -> EntryRecord {
        let id = BlobID(hashing: Array(String(value).utf8))
        return EntryRecord(key: key, blob: BlobInfo(id: id, codec: .none, rawLength: 1, payloadLength: 1, place: .loose),
                           pinned: false, created: 1, expiry: .max, access: 1)
    }

    @Test("its last word on each key agrees with a Dictionary over random sets and removals")
    func lastWordAgreesWithDictionary() {
        var generator = SeededGenerator(seed: 0x7a11)
        for seed: UInt64 in [0, 0x9E37_79B9_7F4A_7C15] {
            var tail = DeferredTail(seed: seed)
            var model: [[UInt8]: EntryRecord?] = [:]
            for step in 0..<5_000 {
                let key = "key-\(Int.random(in: 0..<300, using: &generator))"
                let record: EntryRecord? = Bool.random(using: &generator) ? entry(key, value: step) : nil
                tail.record(record, forKey: Array(key.utf8))
                model[Array(key.utf8)] = .some(record)
            }
            for number in 0..<320 {
                let key = Array("key-\(number)".utf8)
                #expect(tail.lastWord(onKey: key) == model[key])
            }
            #expect(tail.lastWord(onKey: []) == nil)
        }
    }

    @Test("a blob placed twice the same way agrees; placed elsewhere, it does not")
    func onePlacePerBlob() {
        var tail = DeferredTail(seed: 42)
        let id = BlobID(hashing: [1, 2, 3])
        let loose = BlobInfo(id: id, codec: .none, rawLength: 3, payloadLength: 3, place: .loose)
        let packed = BlobInfo(id: id, codec: .none, rawLength: 3, payloadLength: 3, place: .packed(segment: 1, offset: 64))
        let other = BlobInfo(id: BlobID(hashing: [4]), codec: .none, rawLength: 1, payloadLength: 1, place: .packed(segment: 1, offset: 64))
        let first = tail.place(loose), again = tail.place(loose), another = tail.place(other), elsewhere = tail.place(packed)
        #expect(first && again && another)
        #expect(!elsewhere)
    }

    /// Two of `candidates` whose hashes under `seed` share their low 32 bits (all a table
    /// bucket keeps), so that only the comparison of the keys themselves tells them apart.
    private func sharingABucketHash<T>(_ candidates: [T], hash: (T) -> UInt64) -> (T, T)? {
        var seen: [UInt32: Int] = [:]
        for (index, candidate) in candidates.enumerated() {
            let short = UInt32(truncatingIfNeeded: hash(candidate))
            if let earlier = seen[short] { return (candidates[earlier], candidate) }
            seen[short] = index
        }
        return nil
    }

    @Test("keys and blobs whose hashes share a bucket's 32 bits are still told apart")
    func collidingHashes() throws {
        let seed: UInt64 = 7
        let keys = (0..<300_000).map { Array("k\($0)".utf8) }
        let (a, b) = try #require(sharingABucketHash(keys) { key in key.withUnsafeBytes { KeyHash.hash($0, seed: seed) } })
        var tail = DeferredTail(seed: seed)
        tail.record(entry("a", value: 1), forKey: a)
        tail.record(nil, forKey: b)
        #expect(tail.lastWord(onKey: a) == .some(entry("a", value: 1)))
        #expect(tail.lastWord(onKey: b) == .some(nil))

        let ids = (0..<300_000).map { BlobID(high: 0, low: UInt64($0)) }
        let (first, second) = try #require(sharingABucketHash(ids) { KeyHash.hash($0, seed: seed) })
        let place = BlobPlace.packed(segment: 1, offset: 64)
        let one = BlobInfo(id: first, codec: .none, rawLength: 1, payloadLength: 1, place: place)
        let other = BlobInfo(id: second, codec: .none, rawLength: 1, payloadLength: 1, place: .loose)
        let placedOne = tail.place(one), placedOther = tail.place(other)
        #expect(placedOne && placedOther)
    }
}
