/// Pack collection and journal rewrites after an operation, run by the thread whose operation
/// made them due, in steps that hold the lock only briefly: the copying, writing and fsyncing
/// happen with the lock released, so readers and writers on other threads carry on
/// (docs/RELIABILITY.md, "Maintenance outside the lock"). `DIR/lock`'s flock is held
/// throughout: other processes read meanwhile, and their writers wait.
extension Engine {
    /// Runs what is due, unless another thread is already running maintenance (it looks
    /// again when it is done). A failure is not the operation's: the operation had committed.
    /// A thread that holds the gate itself (`compact`, or a maintenance step's own `write`)
    /// finds it taken too, and runs nothing more: the try-lock is what keeps this from nesting.
    func maintain(reader: Bool) {
        _ = maintenanceGate.withLockIfAvailable { runs in
            // One open at a time collects or rewrites (the others go on and find it done).
            directoryLock.ifNoOtherMaintenance {
                var due = try? write(committing: false) { $0.state.maintenanceDue(reader: reader) }
                // Each run makes progress or backs off; the bound is for safety.
                for _ in 0..<8 {
                    guard let task = due else { return }
                    let ran: Bool?
                    switch task {
                    case .packCollection:
                        // Its copy runs without the flock: other processes read and write meanwhile.
                        ran = try? collectPackGarbage(minimumDeadFraction: CacheState.victimFraction, downToHalfAllowance: true)
                    case .journalRewrite:
                        // Holds the flock for every step, so that no other process rewrites the
                        // journal between them (`compact` does, under the flock alone).
                        ran = try? directoryLock.withExclusive { try rewriteJournal() }
                    case .checkpoint:
                        // Under the flock, like a close's snapshot: no other open writes
                        // `DIR/index` or rewrites the journal meanwhile.
                        ran = try? directoryLock.withExclusive { try writeCheckpoint() }
                    }
                    guard ran == true else { return }
                    runs += 1
                    due = try? write(committing: false) { $0.state.maintenanceDue(reader: reader) }
                }
            }
        }
    }

    /// Collects the closed segments at least `minimumDeadFraction` dead (most dead first,
    /// down to half the dead-byte allowance or to nothing, one segment's worth of copies at
    /// most), in the steps of `PackCollection`. Returns whether there was anything to collect.
    /// The caller holds `maintenanceGate`.
    @discardableResult
    func collectPackGarbage(minimumDeadFraction: Double, downToHalfAllowance: Bool) throws -> Bool {
        guard let plan = try write(committing: false, { writer in
            try writer.state.planPackCollection(minimumDeadFraction: minimumDeadFraction,
                                                downTo: downToHalfAllowance ? writer.state.packGarbageAllowance / 2 : 0)
        }) else { return false }
        do {
            let copy = try plan.copy()
            var handedOver = false
            let journal: OpenFile
            do {
                journal = try write { writer in
                    handedOver = true
                    return try writer.state.adopt(copy)
                }
            } catch {
                if !handedOver { copy?.discard(io: directoryLock.io) }
                throw error
            }
            do { try journal.sync() } catch {
                stopJournal(journal, because: error)
                throw error
            }
            try write(committing: false) { $0.state.finish(plan) }
            return true
        } catch {
            try? write(committing: false) { $0.state.abandon(plan) }
            throw error
        }
    }

    /// Writes a snapshot of the index while the cache is in use (a checkpoint), when one is
    /// due (or whenever, `onlyIfDue` false): the index copied under the lock, then the journal
    /// fsynced and the snapshot encoded and written outside it (this open's other threads go
    /// on meanwhile). Returns whether it was written. The caller holds `maintenanceGate` and
    /// the flock.
    func writeCheckpoint(onlyIfDue: Bool = true) throws -> Bool {
        guard let checkpoint = try write(committing: false, { try $0.state.beginCheckpoint(onlyIfDue: onlyIfDue) }) else { return false }
        do { try checkpoint.journalFile.sync() } catch {
            stopJournal(checkpoint.journalFile, because: error)
            throw error
        }
        let firstPage = try? checkpoint.write()
        do {
            try write(committing: false) { $0.state.finishCheckpoint(checkpoint, written: firstPage != nil) }
        } catch {
            // The journal failed meanwhile: say, a writeback error that this fsync and another
            // thread's (under the lock) both covered, reported to that one alone. The snapshot
            // may reflect records that never reached the disk: it must not outlive the journal.
            if let firstPage { checkpoint.remove(ifItBegins: firstPage) }
            throw error
        }
        return firstPage != nil
    }

    /// Rewrites the journal to its live entries: records taken under the lock, the new file
    /// written and fsynced outside it, installed under it with the records written meanwhile.
    /// The caller holds `maintenanceGate`.
    @discardableResult
    func rewriteJournal() throws -> Bool {
        let rewrite = try write(committing: false) { try $0.state.beginJournalRewrite() }
        let replacement: JournalFile.Replacement
        let synchronous: Bool
        do {
            replacement = try rewrite.prepare()
            synchronous = try write(committing: false) { writer in
                try writer.state.finishJournalRewrite(rewrite, replacement: replacement)
                return writer.state.journal.synchronous
            }
        } catch {
            try? write(committing: false) { $0.state.noteFailedJournalRewrite() }
            throw error
        }
        // Installed: in .processCrashSafe mode its last records and its name are fsynced here,
        // outside the lock, before this thread lets other maintenance rely on them.
        if !synchronous {
            do { try replacement.makeDurable(io: rewrite.io) } catch {
                stopJournal(replacement.file, because: error)
                throw error
            }
        }
        return true
    }

    /// Stops the cache until reopen after an fsync of `file` failed outside the lock, if it is
    /// still the journal: pages that failed to reach the disk may be dropped and marked clean,
    /// so nothing written to it can be trusted to be durable any more.
    private func stopJournal(_ file: OpenFile, because error: any Error) {
        try? write(committing: false) { writer in
            if writer.state.journal.file === file { writer.state.journal.abandon(because: error) }
        }
    }

    /// Compacts the cache (`CacheState.compact`), waiting for maintenance running on another
    /// thread first.
    func compact(recompressingTo codec: Codec?) throws -> BlobCache.CompactionReport {
        try maintenanceGate.withLock { _ in try write { try $0.state.compact(recompressingTo: codec) } }
    }
}
