// Steps that evict least recently accessed objects until some number of bytes is freed:
// `BytesStep` walks the order and counts; `BudgetStep` (max_bytes down to the low-water
// mark), `MinFreeStep` (a filesystem's free-space floor, MinFreeStep.swift) and `EvictStep`
// (an explicit `evict`) say how many bytes and of which objects.

import GRDB

/// Evicts objects in the configured order (least recently accessed first for LRU, and for a
/// step with a condition) until a number of bytes is freed.
class BytesStep: PolicyStep {
    var phase: String { "budget" }
    var reason: EvictionReason { .budget }
    private var cursor: (Double, Int64)?
    private var exhausted = false
    private var queues: EvictionQueues?

    /// Bytes still to free (≤ 0: done), computed at the start of each batch.
    func need(_ tx: WriteTransaction, _ run: PolicyRun) throws -> Int64 { 0 }
    /// An extra condition on candidates, which an index serves (an owner).
    var condition: (String, StatementArguments) { ("", []) }
    /// A filter read for each candidate (a filesystem): the rows it leaves out are looked at
    /// and charged, not passed over inside SQLite (`PolicyRun.candidates`).
    var filter: (String, StatementArguments) { ("", []) }
    /// A class member, so a subclass's answer is the one the protocol sees.
    var walksOwnerLRU: Bool { false }
    /// The need counted exactly, asked before the step ends on the bytes counted down (a name
    /// of a file with other names left frees nothing, though its bytes count as freed); nil
    /// where the count down is the measure.
    func recount(_ tx: WriteTransaction, _ run: PolicyRun) throws -> Int64? { nil }
    /// The bytes of an effect that count toward the need.
    func counted(_ effect: EvictionEffect) -> Int64 { effect.files.reduce(0) { $0.adding(saturating: $1.size) } }
    /// `counted`, less the files that other registered names still name (nothing freed).
    private func freed(_ effect: EvictionEffect, _ tx: WriteTransaction) throws -> Int64 {
        guard try SharedFiles.any(tx.db) else { return counted(effect) }
        var e = effect
        e.files = try e.files.filter { try SharedFiles.survivor(queued: $0.path, tx.db) == nil }
        return counted(e)
    }
    /// The order this step follows: a condition or a filter (an owner, a filesystem) walks LRU.
    func order(_ run: PolicyRun) -> EvictionOrder { condition.0.isEmpty && filter.0.isEmpty ? run.order : .lru }
    /// The capacity the order's queues are sized by: the budget, else the bytes held now.
    func capacity(_ tx: WriteTransaction, _ run: PolicyRun) throws -> Int64 {
        if let max = run.maxBytes { return max }
        return try Int64.fetchOne(tx.db.cachedStatement(sql: Sizes.registered)) ?? 0
    }

    func advance(_ tx: WriteTransaction, _ run: PolicyRun) throws -> Bool {
        var need = try need(tx, run)
        var g = run.protection()
        g.needsFiles = true  // an object that holds no file frees nothing: bytes never justify it
        let order = order(run)
        if order != .lru {
            guard need > 0 else { return true }
            return try advance(tx, run, order: order, need: need, guard: g)
        }
        var handled = false  // at least one candidate a batch, so that a run of refusals ends
        walk: while need > 0 && !exhausted && !(handled && run.batchFull) {
            // Young and pinned objects come too, and those of other filesystems, each charged
            // like any candidate: passed over inside SQLite, 180,000 young ones held the
            // writer 1-2 s in a one-batch dry run.
            let rows = try run.candidates(
                tx, order: "accessed", after: cursor, condition: condition.0, arguments: condition.1,
                filter: filter.0, filterArguments: filter.1, limit: 256)
            if rows.isEmpty { exhausted = true }
            for row in rows {
                if handled && run.batchFull { break walk }
                handled = true
                run.charge(1)
                if row.wanted && !tx.deletedIDs.contains(row.id) {
                    if let why = row.held {
                        run.skip(row.id, why)
                    } else if g.leases(row.ref) {
                        run.skip(row.id, .leased)
                    } else if let effect = try run.evict(
                        tx, [row.id], reason: reason, guard: g, detail: "lru: least recently accessed")
                    {
                        need = need.subtracting(saturating: try freed(effect, tx))
                    } else if run.deferred {
                        break walk  // the next batch begins with it
                    }
                }
                cursor = (row.key, row.id)
                if need <= 0 { break }
            }
        }
        return try exhausted || met(need, tx, run)
    }

    /// S3-FIFO or SIEVE: new objects join the queues in id order, room made for each as the
    /// reference implementations do before an insert, then the order evicts until `need` is met.
    private func advance(
        _ tx: WriteTransaction, _ run: PolicyRun, order: EvictionOrder, need start: Int64, guard g: EvictionGuard
    ) throws -> Bool {
        var need = start
        // Loaded once per run: a batch that rolls back ends the run, so memory and store agree.
        let q: EvictionQueues
        if let queues {
            q = queues
            q.forgetHeads()  // other writers may have run between two batches
        } else {
            q = EvictionQueues(order: order, capacity: try capacity(tx, run))
            try q.load(tx.db)
            queues = q
        }
        // A store never placed (a new order) is placed over several batches, not in one.
        var admitted = 0
        admitting: while !run.batchFull && admitted < 10 * run.batch {
            let new = try q.newObjects(tx.db, limit: 256)
            if new.isEmpty { break }
            for n in new {
                admitted += 1
                // S3-FIFO makes no room for an object it will not keep.
                let rejected = try q.rejects(tx.db, ref: n.ref, size: n.size, read: n.read || n.freq > 0)
                run.charge(1)
                while !rejected && q.occupied.adding(saturating: n.size) > q.capacity && need > 0 && !run.batchFull {
                    guard try evictNext(tx, run, q, g, &need) else { break }
                }
                if run.batchFull { break admitting }
                try q.admit(tx.db, id: n.id, ref: n.ref, size: n.size, freq: n.freq, rejected: rejected)
                run.placedInBatch = true
                if rejected && need > 0,
                    let effect = try run.evict(
                        tx, [n.id], reason: reason, guard: g,
                        detail: "s3fifo: larger than the small queue, new and not read since its put", deferrable: false
                    )
                {
                    need = need.subtracting(saturating: try freed(effect, tx))
                    // The small queue's newest, as admitted: its key goes to the ghost record.
                    try q.evicted(
                        tx.db,
                        QueueCandidate(
                            id: n.id, ref: n.ref, queue: EvictionQueues.small, seq: 0, freq: 0, size: n.size,
                            pinned: false, created: 0))
                    if effect.deleted.count > 1 { try q.recount(tx.db) }
                }
            }
        }
        while need > 0 && !run.batchFull {
            guard try evictNext(tx, run, q, g, &need) else {
                // Every placed object is protected: the next batch places more, if any are left.
                // Stopped at the budget instead, it goes on with the order's next.
                if !q.paused { exhausted = try q.newObjects(tx.db, limit: 1).isEmpty }
                break
            }
        }
        try q.save(tx.db)
        let done = try exhausted || met(need, tx, run)
        // The queues in memory have moved on (places, the hand): the store must keep up with
        // them, even when the budget ran out before anything was deleted.
        if !done { run.placedInBatch = true }
        return done
    }

    /// True if `need`, as counted down, is met, and met still when counted again (`recount`):
    /// if not, the next batch goes on from the real need.
    private func met(_ need: Int64, _ tx: WriteTransaction, _ run: PolicyRun) throws -> Bool {
        guard need <= 0 else { return false }
        return try (recount(tx, run) ?? 0) <= 0
    }

    /// Evicts (or passes over) the order's next object; false when none is left, or when the
    /// budget ran out on the objects spared on the way (`q.paused`).
    private func evictNext(
        _ tx: WriteTransaction, _ run: PolicyRun, _ q: EvictionQueues, _ g: EvictionGuard, _ need: inout Int64
    ) throws -> Bool {
        // The objects the order spares on the way count too (a store read all since the last
        // run is a whole pass): at the budget, the batch ends and the next goes on from there.
        let next = try q.next(tx.db, moves: max(1, run.workBudget - run.workInBatch))
        run.charge(q.moved)
        guard let (c, detail) = next else { return false }
        run.charge(1)
        let holder = DeletedDetail(id: c.id, ref: c.ref, owner: "", pinned: c.pinned, created: c.created)
        if let why = g.protection(of: holder) {
            run.skip(c.id, why)
            try q.skip(tx.db, c)
        } else if let effect = try run.evict(tx, [c.id], reason: reason, guard: g, detail: detail, deferrable: false) {
            need = need.subtracting(saturating: try freed(effect, tx))
            try q.evicted(tx.db, c)
            if effect.deleted.count > 1 { try q.recount(tx.db) }
        } else {
            try q.skip(tx.db, c)
        }
        return true
    }
}

/// `max_bytes` with `low_water`: over budget, evict down to the target.
final class BudgetStep: BytesStep {
    let max: Int64
    let target: Int64
    private var started = false

    init(max: Int64, target: Int64) {
        self.max = max
        self.target = target
    }

    override func need(_ tx: WriteTransaction, _ run: PolicyRun) throws -> Int64 {
        let total = try total(tx)
        if !started {
            guard total > max else { return 0 }
            started = true
        }
        return total.subtracting(saturating: target)
    }

    override func recount(_ tx: WriteTransaction, _ run: PolicyRun) throws -> Int64? {
        // Not over `max` at the start: nothing to do, though the total may lie above `target`.
        // With no file listed as shared (entries go at the commit, not before) every name
        // evicted was its file's only one, and the count down is exact.
        guard started, try SharedFiles.any(tx.db) else { return nil }
        return try total(tx).subtracting(saturating: target)
    }

    /// The bytes of the registered files, each once however many names it has.
    private func total(_ tx: WriteTransaction) throws -> Int64 {
        try Int64.fetchOne(tx.db.cachedStatement(sql: Sizes.registered)) ?? 0
    }
}

/// `policy.evict`: a number of bytes, from one owner or all; without bytes, all of an owner.
/// Bytes freed earlier in the run (owners over quota go first: Store+Policies.swift) count.
final class EvictStep: BytesStep {
    let bytes: Int64?
    let owner: String?
    override var phase: String { "evict" }
    override var reason: EvictionReason { .evict }

    init(bytes: Int64?, owner: String?) {
        self.bytes = bytes
        self.owner = owner
    }

    // Without a byte target every object counts, so the step ends only when none is left.
    override func need(_ tx: WriteTransaction, _ run: PolicyRun) throws -> Int64 {
        guard let bytes else { return .max }
        return bytes.subtracting(saturating: run.plan.bytes)
    }

    override var walksOwnerLRU: Bool { owner != nil }

    override var condition: (String, StatementArguments) {
        guard let owner else { return ("", []) }
        return ("d.owner = ?", [owner])
    }

    override func counted(_ effect: EvictionEffect) -> Int64 { bytes == nil ? 0 : super.counted(effect) }
}
