// The per-owner LRU index (`index_default__owner_accessed`): the order in which quota
// enforcement and `policy.evict` of one owner pick objects. A new object adds an entry at its
// owner's end of it, so a group commit of puts from many owners dirties a page of it per
// owner: about a fifth of a put's cost (docs/PERFORMANCE.md, "Durable puts over the
// socket"). It is kept only while a quota is configured: built at open, or before the first
// run that needs it (a quota added by a reload); dropped at an open without quotas. An
// eviction by owner without a quota builds it for its run and drops it after; a dry run
// builds it in the transaction it rolls back, so it changes nothing.

import GRDB

extension Store {
    /// Whether the per-owner LRU index exists now.
    var hasOwnerLRUIndex: Bool {
        get throws {
            try read { r in
                try Bool.fetchOne(
                    r.db, sql: "SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'index' AND name = ?)",
                    arguments: [IndexTable.defaultOwnerAccessed]) ?? false
            }
        }
    }

    /// Builds the per-owner LRU index if it is missing, in a transaction of its own. One pass
    /// over the default index, while writers wait: about a second per million objects.
    func ensureOwnerLRUIndex() throws {
        // On the writer, not after a read: a run ending now may be dropping it.
        try changeSchema { db in try IndexTable.createDefaultOwnerAccessed(db) }
    }

    /// Before a real run that walks one owner's LRU order: the index exists until the last
    /// such run ends (`endOwnerLRUWalk`). If it cannot be built (a full disk, when evicting
    /// matters most) the run goes on without it: the walk then sorts the owner's objects,
    /// slower, in the same order.
    func beginOwnerLRUWalk() {
        state.withLock { $0.ownerLRUWalkers += 1 }
        try? ensureOwnerLRUIndex()
    }

    /// After such a run: with no quota configured now and no other such run under way, the
    /// index goes again (a failure to drop it only leaves it until the next open).
    func endOwnerLRUWalk() {
        let quotas = state.withLock { s in
            s.ownerLRUWalkers -= 1
            return Store.hasQuotas(s.policy)
        }
        guard !quotas else { return }
        try? changeSchema { db in
            // Decided on the writer, where a run beginning now builds it again after us.
            let unused = state.withLock { $0.ownerLRUWalkers == 0 && !Store.hasQuotas($0.policy) }
            if unused { try IndexTable.dropDefaultOwnerAccessed(db) }
        }
    }

    /// At open: the index exists if and only if quotas are configured. A build is reported
    /// as an index rebuild (the daemon logs it: the first start with a quota waits for it);
    /// one that fails is a warning, not a failed open.
    func applyOwnerLRUPolicy(progress: (@Sendable (IndexRebuildProgress) -> Void)?) throws {
        if Store.hasQuotas(configuration.policy) {
            guard try !hasOwnerLRUIndex else { return }
            let total = try read { r in try Int.fetchOne(r.db, sql: "SELECT COUNT(*) FROM index_default") ?? 0 }
            let name = IndexDefinition.defaultName + " (owner, accessed: quotas are configured)"
            progress?(IndexRebuildProgress(index: name, done: 0, total: total))
            do {
                try ensureOwnerLRUIndex()
                progress?(IndexRebuildProgress(index: name, done: total, total: total))
            } catch {
                // Not a reason to stay down: a full disk is when the policies must run.
                state.withLock {
                    $0.openWarnings.append(
                        "the per-owner LRU index for the quotas could not be built (\(error)): quota runs sort each"
                            + " owner's objects instead, slower, until one of them builds it")
                }
            }
        } else if try hasOwnerLRUIndex {
            try? changeSchema { db in try IndexTable.dropDefaultOwnerAccessed(db) }  // else kept until the next open
        }
    }

    private static func hasQuotas(_ policy: PolicyConfiguration?) -> Bool { !(policy?.quotas.isEmpty ?? true) }

    /// A write that changes no object: it takes no commit number and tells watchers nothing.
    private func changeSchema(_ body: (Database) throws -> Void) throws {
        try checkWritable()
        try Store.mapErrors { try pool.write(body) }
    }
}
