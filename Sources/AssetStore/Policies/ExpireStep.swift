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
        var condition = "d.\(column) < ?"
        var args: StatementArguments = [cutoff]
        if let collection {
            // Unary plus: walk the age index and filter, never scan and sort a whole collection.
            condition += " AND +d.collection = ?"
            args += [collection]
        }
        let rows = try run.candidates(
            tx, order: column, after: cursor, condition: condition, arguments: args, limit: run.batch)
        guard let last = rows.last else { return true }
        run.charge(rows.count)
        let kept = rows.filter { !g.objects.contains($0.ref) }
        let ids = kept.map(\.id)
        // The rows as just read in this transaction: the deletion need not read them again.
        var known = [Int64: DeletedDetail](minimumCapacity: kept.count)
        for row in kept { known[row.id] = row.detail }
        // The whole batch at once; if something in it is protected, or it would spend too much
        // of the budget, one at a time until the budget is spent.
        let together = ids.count > 1 ? try run.evict(tx, ids, reason: reason, guard: g, known: known) : nil
        if ids.isEmpty || together != nil {
            cursor = (last.key, last.id)
            return rows.count < run.batch
        }
        // At least one row a batch, so that a run of refusals still ends.
        var handled = false
        for row in rows {
            if handled && run.batchFull { return false }
            if !g.objects.contains(row.ref) && !tx.deletedIDs.contains(row.id) {
                _ = try run.evict(tx, [row.id], reason: reason, guard: g, known: known)
                if run.deferred { return false }  // the next batch begins with it
            }
            cursor = (row.key, row.id)
            handled = true
        }
        return rows.count < run.batch
    }
}
