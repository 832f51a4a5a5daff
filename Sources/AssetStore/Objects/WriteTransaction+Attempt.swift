// A part of a write transaction that fails alone: its SQL runs in a savepoint and the
// transaction's recorded intent is put back as it was, so the rest commits unharmed. The
// daemon's group commit runs each client's put this way. Not for flush (its work spans parts).

import GRDB

extension WriteTransaction {
    /// Runs `body`; if it throws, everything it did is undone (SQL and recorded intent) and
    /// the error is rethrown, and the transaction goes on.
    public func attempt<T>(_ body: () throws -> T) throws -> T {
        let saved = (
            pendingDeletes, pendingDeleteIDs, dirty, dirtyOrder, inserted, unresolved, removedWithReason,
            indexDirty, accessDirty, filesTouched, report, templates, indexes, heldRechecked
        )
        // A caller's bound and what its reads spent go with its part: a put that failed does
        // not bound the others'.
        let savedLimit = (cascadeLimit, readAllowance, readAllowance?.left, requestBound)
        var value: T?
        try Store.checkNotRolledBack(db)
        do {
            try db.inSavepoint {
                value = try body()
                return .commit
            }
        } catch {
            (
                pendingDeletes, pendingDeleteIDs, dirty, dirtyOrder, inserted, unresolved,
                removedWithReason,
                indexDirty, accessDirty, filesTouched, report, templates, indexes, heldRechecked
            ) = saved
            (cascadeLimit, readAllowance, requestBound) = (savedLimit.0, savedLimit.1, savedLimit.3)
            // What the part spent is given back, as its reads are undone.
            if let left = savedLimit.2 { readAllowance?.left = left }
            throw error
        }
        return value!  // set when the savepoint committed
    }
}
