// The key arena: every live entry's key, UTF-8, back to back in one buffer that entries point
// into by offset and length (no `String` per key, nothing for the allocator to track per entry).
// Freed keys stay until they outweigh the live ones; then the arena is rewritten with only those.
extension CacheIndex {
    /// Calls `body` with the UTF-8 bytes of the key of entry `slot`.
    func withKeyBytes<Result>(at slot: Int32, _ body: (UnsafeRawBufferPointer) -> Result) -> Result {
        let entry = entries[Int(slot)]
        return keyArena.withUnsafeBytes {
            body(UnsafeRawBufferPointer(rebasing: $0[Int(entry.keyOffset)..<Int(entry.keyOffset) + Int(entry.keyLength)]))
        }
    }

    func key(at slot: Int32) -> String {
        let entry = entries[Int(slot)]
        return keyArena.withUnsafeBytes { arena in
            String(decoding: arena[Int(entry.keyOffset)..<Int(entry.keyOffset) + Int(entry.keyLength)], as: UTF8.self)
        }
    }

    /// Bytes of the live entries' keys.
    var liveKeyBytes: Int { keyArena.count - deadKeyBytes }

    /// Whether a new key of `length` bytes fits the arena's 4 GiB of offsets.
    func hasRoom(forKeyOf length: Int) -> Bool { keyArena.count - deadKeyBytes + length <= Int(UInt32.max) }

    mutating func appendKey(_ bytes: UnsafeRawBufferPointer) -> UInt32 {
        if keyArena.count + bytes.count > Int(UInt32.max) { compactKeys() }
        let offset = keyArena.count
        precondition(offset + bytes.count <= Int(UInt32.max), "keys take more than 4 GiB")
        keyArena.append(contentsOf: bytes)
        return UInt32(offset)
    }

    mutating func releaseKey(length: Int) {
        deadKeyBytes += length
        if deadKeyBytes > max(1 << 16, keyArena.count / 2) { compactKeys() }
    }

    /// Rewrites the arena with only live keys, in slot order.
    private mutating func compactKeys() {
        var arena = FlatArray<UInt8>()
        arena.reserveCapacity(keyArena.count - deadKeyBytes)
        keyArena.withUnsafeBytes { old in
            for slot in entries.indices where entries[slot].blob >= 0 {
                let start = Int(entries[slot].keyOffset)
                entries[slot].keyOffset = UInt32(arena.count)
                arena.append(contentsOf: UnsafeRawBufferPointer(rebasing: old[start..<start + Int(entries[slot].keyLength)]))
            }
        }
        keyArena = arena
        deadKeyBytes = 0
    }
}
