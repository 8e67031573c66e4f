extension BlobCache {
    /// Waits until every set and remove made so far has reached the remote tier, or was given
    /// up because the remote failed (`statistics().remote.droppedWrites`). Returns at once
    /// without a remote.
    ///
    ///     try cache.set(bytes, forKey: "build/42")
    ///     cache.flushRemote()   // other machines can read it now
    public func flushRemote() {
        remote?.flush()
    }

    /// A local miss of `key` asked of the remote: a value it has is written back locally with
    /// the remote's expiry (not when the local caps cannot hold it) and returned.
    /// A set made meanwhile (here or in another process) is not replaced.
    func remoteValue(forRawKey key: String) throws -> [UInt8]? {
        // Keys no set could have made (empty, too long) are not asked for.
        guard let remote, !key.isEmpty, key.utf8.count <= Self.maxKeyBytes + NamespaceKey.maxNameBytes + 3,
              let found = remote.value(forKey: key, maxValueBytes: try maxValueBytes()) else { return nil }
        let expiry: Expiry = found.expiry == Nanoseconds.never ? .never : .at(Nanoseconds.date(found.expiry))
        writeBack {
            _ = try found.value.withUnsafeBytes {
                try engine.set($0, key: key, expiry: expiry, pinned: false, knownID: found.id, ifAbsent: true)
            }
        }
        return found.value
    }

    /// A local miss of the blob `id` asked of the remote, written back as a content-addressed
    /// entry.
    func remoteValue(for id: BlobID) throws -> [UInt8]? {
        guard let remote, let value = remote.value(for: id, maxValueBytes: try maxValueBytes()) else { return nil }
        writeBack {
            _ = try value.withUnsafeBytes {
                try engine.set($0, key: Self.contentAddressedKeyPrefix + id.hex, expiry: defaultExpiry, pinned: false,
                        knownID: id, ifAbsent: true)
            }
        }
        return value
    }

    /// A value larger than the local byte cap is neither fetched nor written back.
    private func maxValueBytes() throws -> Int? {
        try engine.read(.thisOpen) { .answer($0.maxStoredBytes) }
    }

    /// Writes a remote hit back locally. A failure there (a cap, a full disk) does not fail the
    /// read that already has its value; it is logged.
    private func writeBack(_ body: () throws -> Void) {
        do {
            try body()
        } catch {
            telemetry.logger.notice("remote value not written back locally", metadata: ["directory": "\(directory)", "error": "\(error)"])
        }
    }
}
