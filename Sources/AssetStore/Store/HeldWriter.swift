// Several write transactions with no other writer between them: a policy run holds the writer
// for a slice of its batches, so that unlinks started in one batch's transaction (after it
// checked that no edge references their paths) may go on across its commit into the next
// batch's transaction. Nothing else can reference those paths meanwhile (SweepAlongside.swift).

import Foundation
import GRDB

/// The writer's connection, held between transactions by `Store.holdingWriter`.
struct HeldWriter {
    let store: Store
    let db: Database

    /// One write transaction, committed, then (with durability "full") synced before it
    /// returns, as `Store.write` does; a failed sync fails it.
    @discardableResult
    func write<T>(_ body: (WriteTransaction) throws -> T) throws -> Committed<T> {
        try store.checkWritable()
        let committed = try store.freeingSpace(nil) { try Store.mapErrors { try store.transact(db, owner: nil, body) } }
        try store.syncCommitted(committed.report.commit)
        return committed
    }
}

extension Store {
    /// How long a policy run holds the writer for consecutive batches before it lets other
    /// writers in (at the next batch's end): a write waits for up to this and one batch, where
    /// it waited for one batch when every batch waited for its own unlinks.
    public static let policySliceSeconds = 0.1

    /// Runs `body` holding the writer: the transactions it makes through the handle are the
    /// only ones until it returns. `body` must not call `write` (the writer is not reentrant).
    func holdingWriter<T>(_ body: (HeldWriter) throws -> T) throws -> T {
        try checkWritable()
        // The reserve's rules look at the thread: the writer's may be another.
        let freeing = Store.insideFreeingWrite
        return try Store.mapErrors {
            try pool.writeWithoutTransaction { db in
                let before = Store.insideFreeingWrite
                Store.insideFreeingWrite = freeing
                defer { Store.insideFreeingWrite = before }
                return try body(HeldWriter(store: self, db: db))
            }
        }
    }
}
