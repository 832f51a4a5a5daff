// TTL expiry (`max_idle`, `max_age`, an explicit `expire`): every evictable object, of one
// collection or all, idle or aged past a cutoff goes, a batch at a time.

import GRDB

/// Deletes every evictable object (of a collection) idle or aged past a cutoff.
final class ExpireStep: PolicyStep {
    let collection: String?
    let column: String
    let cutoff: Double
    let reason: EvictionReason
    private var cursor: (Double, Int64)?
    /// Objects to delete together next, and the work one cost in the last group that went.
    private var group: Int?
    private var cost: Int?
    var phase: String { reason == .idle ? "expire idle" : "expire age" }

    init(_ run: PolicyRun, collection: String?, idle: Double) {
        self.collection = collection
        column = "accessed"
        cutoff = run.now - idle
        reason = .idle
    }

    init(_ run: PolicyRun, collection: String?, age: Double) {
        self.collection = collection
        column = "created"
        cutoff = run.now - age
        reason = .age
    }

    func advance(_ tx: WriteTransaction, _ run: PolicyRun) throws -> Bool {
        let g = run.protection()
        var filter = ("", StatementArguments())
        // A filter, not a clause: the age index is walked, never a whole collection sorted,
        // and other collections' rows are charged as they are passed over.
        if let collection { filter = ("d.collection = ?", [collection]) }
        var first = true  // at least one group a batch, so that a run of refusals ends
        while !(!first && run.batchFull) {
            // Young and pinned objects, and other collections', come too, each charged: passed
            // over inside SQLite, any number of them held the writer in a one-batch dry run.
            let limit = max(1, min(run.batch, run.workBudget - run.workInBatch))
            let rows = try run.candidates(
                tx, order: column, after: cursor, condition: "d.\(column) < ?", arguments: [cutoff],
                filter: filter.0, filterArguments: filter.1, limit: limit)
            guard !rows.isEmpty else { return true }
            guard try expire(rows, tx, run, g, first: first) else { return false }
            if rows.count < limit { return true }
            first = false
        }
        return false
    }

    /// Deletes what may go of `rows`, in groups, each row charged as a group takes it in;
    /// false if the batch ended first (the next one begins where it stopped).
    private func expire(
        _ rows: [PolicyCandidate], _ tx: WriteTransaction, _ run: PolicyRun, _ g: EvictionGuard, first: Bool
    ) throws -> Bool {
        // The rows as just read in this transaction: the deletion need not read them again.
        var known = [Int64: DeletedDetail](minimumCapacity: rows.count)
        for row in rows where mayGo(row, tx, g) { known[row.id] = row.detail }
        var next = 0  // rows before it are handled
        var charged = 0  // rows before it are charged
        while next < rows.count {
            let size = groupSize(run, first: first && next == 0)
            if size == 0 { return false }  // the next batch begins here
            var end = next
            var ids = [Int64]()
            while end < rows.count && ids.count < size {
                if mayGo(rows[end], tx, g) {
                    ids.append(rows[end].id)
                } else if rows[end].wanted, let why = rows[end].held {
                    run.skip(rows[end].id, why)
                }
                end += 1
            }
            if end > charged {  // a group undone and taken again is not charged twice
                run.charge(end - charged)
                charged = end
            }
            let before = run.workInBatch
            let went = try ids.isEmpty || run.evict(tx, ids, reason: reason, guard: g, known: known) != nil
            if went {
                if !ids.isEmpty {
                    cost = max(1, (run.workInBatch - before + ids.count - 1) / ids.count)
                    group = min(run.batch, 2 * ids.count)
                }
                cursor = (rows[end - 1].key, rows[end - 1].id)
                next = end
                continue
            }
            if run.deferred {
                // Undone for the budget: the next batch begins with half of it. A batch's first
                // group goes on with its first object alone (never limited), so that every
                // transaction deletes something and a one-batch dry run plans something.
                group = max(1, ids.count / 2)
                if run.deletedInBatch == 0 && ids.count > 1 {
                    group = 1
                    continue
                }
                return false
            }
            if ids.count == 1 {  // refused, and counted as skipped
                cursor = (rows[end - 1].key, rows[end - 1].id)
                next = end
                continue
            }
            // Something in the group is protected: its objects go one at a time.
            group = max(1, ids.count / 2)
            for row in rows[next..<end] {
                if (!first || next > 0) && run.batchFull { return false }
                if mayGo(row, tx, g) {
                    _ = try run.evict(tx, [row.id], reason: reason, guard: g, known: known)
                    if run.deferred { return false }  // the next batch begins with it
                }
                cursor = (row.key, row.id)
                next += 1
            }
        }
        return true
    }

    /// Whether `row` is one to delete now: of the step's collection, neither pinned nor too
    /// young, nor leased, nor gone already in this transaction.
    private func mayGo(_ row: PolicyCandidate, _ tx: WriteTransaction, _ g: EvictionGuard) -> Bool {
        row.wanted && row.held == nil && !g.leases(row.ref) && !tx.deletedIDs.contains(row.id)
    }

    /// How many objects to delete together next: no more than the budget left takes at the
    /// work an object cost last time, and at most twice the last group that went (half the
    /// last one undone for the budget), so that a batch of long cascades is not cut to one
    /// deletion a transaction, nor a batch of plain objects split at all. One at least, first.
    private func groupSize(_ run: PolicyRun, first: Bool) -> Int {
        var size = min(group ?? run.batch, run.batch)
        if !first && run.batchFull { return 0 }
        if let cost { size = min(size, max(0, run.workBudget - run.workInBatch) / cost) }
        return first ? max(1, size) : size
    }
}
