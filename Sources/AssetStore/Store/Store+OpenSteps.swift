// The writes an open makes once the schema is current. Each may meet a full disk, and none
// is needed to serve reads: a full disk makes each a warning instead of a failed open, so
// the daemon comes up, serves reads, and answers writes `storage_full` until there is room
// (a delete or a policy run can still commit through the reserve, Store+Reserve.swift).

import GRDB

extension Store {
    /// The rest of a writable open: configured definitions, the WAL synced, the roots'
    /// devices, lease deferrals ended and due unlinks drained (not on a copy), the reserve
    /// allocated.
    func finishOpen(progress: (@Sendable (IndexRebuildProgress) -> Void)?) throws {
        var skipped = [String]()
        func unlessFull(_ step: String, _ body: () throws -> Void) throws {
            do { try body() } catch let e where Store.isStorageFull(e) { skipped.append(step) }
        }
        try unlessFull("the configured indexes and templates (the stored ones stay in force)") {
            try applyConfiguredDefinitions(progress: progress)
        }
        try applyOwnerLRUPolicy(progress: progress)  // a failure is already only a warning
        try makeDurable()
        // Before any sweep: rows may have been queued on a device renumbered since.
        try unlessFull("the roots' devices") {
            try Store.mapErrors {
                try pool.write { db in
                    let found = try noteRootDevices(db, now: configuration.clock())
                    let said = try Store.carried(db, found.ambiguous)
                    state.withLock { $0.openWarnings += said }
                    try loadMinFreeCaps(db)
                    // A store opened under another order than its state's forgets that state,
                    // even if the next open goes back to it.
                    try EvictionQueues.noteOrder(db, configuration.policy?.order ?? .lru)
                }
            }
        }
        if !skipped.isEmpty { try readRootDevices() }  // what was recorded before still maps devices
        // Never on a copy: its queue lists files the live database may hold again. Ending
        // deferrals only reschedules rows (no daemon runs now): done on every other open.
        if !isCopy {
            try unlessFull("the end of lease deferrals") { _ = try endLeaseDeferrals() }
            if configuration.drainOnOpen { try unlessFull("the drain of due unlinks") { _ = try sweep() } }
        }
        reserve.restore()
        guard !skipped.isEmpty else { return }
        state.withLock {
            $0.openWarnings.append(
                "the disk holding \(path) is full: not written at start: " + skipped.joined(separator: "; ")
                    + ". Reads are served; writes answer storage_full until there is room (object.delete and"
                    + " policy runs can still commit, through the reserve)")
        }
    }
}
