// The per-owner LRU index (`index_default__owner_accessed`): the order in which quota
// enforcement and `policy.evict` of one owner pick objects. A new object adds an entry at its
// owner's end of it, so a group commit of puts from many owners dirties a page of it per
// owner: about a fifth of a put's cost (README "What bounds puts"). It is kept only while
// something needs it: built at open when quotas are configured, and before any policy run
// that needs it (a quota added by a reload, an eviction by owner); dropped at an open whose
// configuration has no quota.

import GRDB

extension Store {
    /// The SQLite name of the per-owner LRU index.
    static let ownerLRUIndex = IndexTable.sqlIndex(IndexDefinition.defaultName, "owner_accessed")

    /// Whether the per-owner LRU index exists now.
    public var hasOwnerLRUIndex: Bool {
        get throws {
            try read { r in
                try Bool.fetchOne(
                    r.db, sql: "SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'index' AND name = ?)",
                    arguments: [Store.ownerLRUIndex]) ?? false
            }
        }
    }

    /// Builds the per-owner LRU index if it is missing, in a transaction of its own (so a dry
    /// run, which rolls back, does not build it again next time). One pass over the default
    /// index, while writers wait: about a second per million objects.
    func ensureOwnerLRUIndex() throws {
        guard try !hasOwnerLRUIndex else { return }
        try changeSchema { db in try IndexTable.createDefaultOwnerAccessed(db) }
    }

    /// At open: the index exists if and only if quotas are configured.
    func applyOwnerLRUPolicy() throws {
        if !(configuration.policy?.quotas.isEmpty ?? true) {
            try ensureOwnerLRUIndex()
        } else if try hasOwnerLRUIndex {
            try changeSchema { db in try db.execute(sql: "DROP INDEX \"\(Store.ownerLRUIndex)\"") }
        }
    }

    /// A write that changes no object, so takes no commit number and tells watchers nothing
    /// (a dry run stays without a visible commit).
    private func changeSchema(_ body: (Database) throws -> Void) throws {
        try checkOpen()
        try checkNoSyncFailure()
        guard !configuration.readOnly else {
            throw StoreError(.busy, "the store is open read-only: another process holds the database")
        }
        try Store.mapErrors { try pool.write(body) }
    }
}
