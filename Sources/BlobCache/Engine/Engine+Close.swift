/// The end of an open: a close, or a rekey, which ends it under the new key.
extension Engine {
    /// Writes out recency, syncs the journal, writes a snapshot when worth it, saves the
    /// counts and releases the directory; nothing when closed already. Waits for maintenance
    /// running on another thread to finish its steps. `remoteRejections`: the remote tier's
    /// refusals, kept with the cache's lifetime counts.
    func close(remoteRejections: Int) throws {
        try maintenanceGate.withLock { _ in
            try closing { sharing in
                let state = sharing.state
                state.counters.remoteRejections = remoteRejections
                finalStatistics.withLock { $0 = state.statistics }
                // Closing the file gives up the presence lock: the last open to close is alone.
                defer { directoryLock.close() }
                // After a failed journal write there is nothing safe to add: reopening replays the
                // journal as it stands.
                guard state.journal.failure == nil else { return }
                // A restore still deferred stays so when no other open changed anything: closing
                // after a few gets does not read the whole snapshot.
                try sharing.underFlock(keepingDeferredRestore: true) { writer in
                    try writer.state.closeCleanly()
                    directoryLock.markClosed(cleanly: true)
                }
            }
        }
    }

    /// Encrypts everything again under `newCipher` (`CacheState.rekey`) and ends this open:
    /// nothing more is written through it, since its index and pipeline speak the old key.
    /// Fails with `inUse` while another open of the directory exists (the engine stays open).
    func rekeyAndClose(to newCipher: CacheCipher) throws -> (blobs: Int, droppedEntries: Int) {
        // The rekey and the end of this open under one hold of the lock: no operation of
        // another thread can slip in between and write with the old key into the new journal.
        let rekeyed = try maintenanceGate.withLock { _ in
            try closing(onlyIfItSucceeds: true) { sharing -> (blobs: Int, droppedEntries: Int) in
                if let failure = sharing.state.journal.failure { throw failure }
                let result = try sharing.underFlock { writer in
                    guard directoryLock.isAlone else { throw BlobCacheError.inUse(path: directory, pid: nil) }
                    return try writer.commit { try writer.state.rekey(to: newCipher) }
                }
                finalStatistics.withLock { $0 = sharing.state.statistics }
                // (A clean close's snapshot would describe the old blobs under the new salt.)
                try? sharing.underFlock { _ in directoryLock.markClosed(cleanly: true) }
                directoryLock.close()
                return result
            }
        }
        guard let rekeyed else { throw BlobCacheError.closed }
        return rekeyed
    }
}
