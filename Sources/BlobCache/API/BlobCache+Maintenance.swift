/// Pack collection and journal rewrites after an operation, run by the thread whose operation
/// made them due, in steps that hold the lock only briefly: the copying, writing and fsyncing
/// happen with the lock released, so readers and writers on other threads carry on
/// (docs/RELIABILITY.md, "Maintenance outside the lock").
extension BlobCache {
    /// Runs what is due, unless another thread is already running maintenance (it looks
    /// again when it is done). A failure is not the operation's: the operation had committed.
    func maintain(reader: Bool) {
        _ = maintenanceGate.withLockIfAvailable { runs in
            var due = try? withEngine { $0.maintenanceDue(reader: reader) }
            // Each run makes progress or backs off; the bound is for safety.
            for _ in 0..<8 {
                guard let task = due else { return }
                let ran: Bool?
                switch task {
                case .packCollection: ran = try? collectPackGarbage(minimumDeadFraction: CacheEngine.victimFraction, downToHalfAllowance: true)
                case .journalRewrite: ran = try? rewriteJournal()
                }
                guard ran == true else { return }
                runs += 1
                due = try? withEngine { $0.maintenanceDue(reader: reader) }
            }
        }
    }

    /// Collects the closed segments at least `minimumDeadFraction` dead (most dead first,
    /// down to half the dead-byte allowance or to nothing, one segment's worth of copies at
    /// most), in the steps of `PackCollection`. Returns whether there was anything to collect.
    /// The caller holds `maintenanceGate`.
    @discardableResult
    func collectPackGarbage(minimumDeadFraction: Double, downToHalfAllowance: Bool) throws -> Bool {
        guard let plan = try withEngine({ engine in
            engine.planPackCollection(minimumDeadFraction: minimumDeadFraction,
                                      downTo: downToHalfAllowance ? engine.packGarbageAllowance / 2 : 0)
        }) else { return false }
        do {
            let copy = try plan.copy()
            let journal = try withEngine { engine in try engine.perform { engine.adopt(copy) } }
            do { try journal.sync() } catch {
                // Pages that failed to reach the disk may be dropped and marked clean: nothing
                // written to this journal can be trusted to be durable any more.
                try? withEngine { engine in
                    if engine.journal.file === journal { engine.journal.abandon(because: error) }
                }
                throw error
            }
            try withEngine { $0.finish(plan) }
            return true
        } catch {
            try? withEngine { $0.abandon(plan) }
            throw error
        }
    }

    /// Rewrites the journal to its live entries: records taken under the lock, the new file
    /// written and fsynced outside it, installed under it with the records written meanwhile.
    /// The caller holds `maintenanceGate`.
    @discardableResult
    func rewriteJournal() throws -> Bool {
        let rewrite = try withEngine { try $0.beginJournalRewrite() }
        do {
            let replacement = try rewrite.prepare()
            try withEngine { try $0.finishJournalRewrite(rewrite, replacement: replacement) }
            return true
        } catch {
            try? withEngine { $0.noteFailedJournalRewrite() }
            throw error
        }
    }
}
