// Running lifecycle policies (assetd(8), DATA MODEL, Lifecycle policies). A run is a list of steps
// (TTL expiry, quotas, the byte budget, free space, an explicit evict or expire); each step deletes
// at most `batch` objects per write transaction, so writers wait for one batch, never for the whole
// run. Each transaction also has a budget of work (`workBudget`: candidates looked at, objects,
// edges and files its deletions reach), so that protected candidates or long cascades do not
// hold the writer either; a batch that spends it commits and the next one goes on from there.
// A dry run does the same batches in one transaction and rolls it back: the plan it returns
// is, by construction, what the real run of an unchanged store deletes. Every decision uses one
// clock reading taken at the start, so both runs see the same ages.

import Foundation
import GRDB

/// One policy, advanced a batch at a time.
protocol PolicyStep: AnyObject {
    /// The phase name progress reports.
    var phase: String { get }
    /// Deletes up to `run.batch` objects, and stops once `run.batchFull`, having looked at
    /// one candidate at least; true when the step has nothing more to do.
    func advance(_ tx: WriteTransaction, _ run: PolicyRun) throws -> Bool
    /// Walks one owner's objects least recently accessed first (Store+OwnerLRU.swift).
    var walksOwnerLRU: Bool { get }
}

extension PolicyStep {
    var walksOwnerLRU: Bool { false }
}

private struct DryRunFinished: Error {}
private struct NothingDeleted: Error {}

/// One run of some policy steps and the plan it builds.
final class PolicyRun {
    let store: Store
    /// The clock reading every decision uses.
    let now: Double
    let batch: Int
    let dryRun: Bool
    /// What is older than the policy's `min_age` by both clocks (ClockSteps.swift): a step forward of the
    /// wall clock does not age the objects created before it.
    let oldEnough: AgeCutoff
    /// The order byte targets follow, and the budget that sizes its queues.
    let order: EvictionOrder
    let maxBytes: Int64?
    let progress: (@Sendable (PolicyProgress) -> Void)?
    private(set) var plan: PolicyPlan
    /// Objects deleted in the current transaction (a step stops at `batch`).
    var deletedInBatch = 0
    /// Work a transaction may do: `workPerObject` for each object a batch may delete.
    let workBudget: Int
    static let workPerObject = 10
    /// Work done in the current transaction (`charge`, and every eviction's `EvictionBudget`).
    private(set) var workInBatch = 0
    /// The last `evict` was undone for want of budget: the step tries it again next batch.
    private(set) var deferred = false
    /// Whether the current transaction placed new objects in an order's queues: it commits
    /// even if it deleted nothing, or the next run would place the same ones and no others.
    var placedInBatch = false
    /// Whether the current transaction recorded a `min_free` cap's change: it commits too.
    var recordedInBatch = false
    /// At most this many batches in a dry run (nil: all); the plan then says it was cut short.
    let dryRunBatches: Int?
    /// True while this batch holds new leases back (`LeaseRegistry.beginPolicyBatch`).
    private var holdingLeases = false

    init(
        store: Store, policy: PolicyConfiguration, dryRun: Bool, dryRunBatches: Int? = nil,
        progress: (@Sendable (PolicyProgress) -> Void)?
    ) {
        self.store = store
        let clock = store.clocks.read()
        now = clock.wall
        oldEnough = clock.olderThan(policy.minAge)
        batch = max(1, policy.batch)
        workBudget = batch * PolicyRun.workPerObject
        order = policy.order
        maxBytes = policy.maxBytes
        self.dryRun = dryRun
        self.dryRunBatches = dryRunBatches
        self.progress = progress
        plan = PolicyPlan(dryRun: dryRun)
    }

    var batchFull: Bool { deletedInBatch >= batch || workInBatch >= workBudget }

    /// A `min_free` step found its floor out of reach: the cap it applies goes in the plan
    /// (not rolled back with a batch: it is no deletion).
    func noteCap(_ cap: MinFreeCap) { plan.minFreeCaps.append(cap) }

    /// Counts `n` candidates looked at against the transaction's budget.
    func charge(_ n: Int) { workInBatch += n }

    private func startBatch() {
        deletedInBatch = 0
        workInBatch = 0
    }

    func run(_ steps: [PolicyStep]) throws -> PolicyPlan {
        if !dryRun { try store.checkNotCopy("real policy run") }
        // Every run, dry ones too, orders by every touch recorded so far (Store+Access.swift;
        // on a full disk, by those written).
        if !store.isReadOnly { try store.flushAccesses() }
        // A dry run builds the per-owner LRU index inside its own transaction, which it rolls
        // back: it changes nothing, not even the schema (Store+OwnerLRU.swift).
        let walks = steps.contains(where: \.walksOwnerLRU)
        if walks && !dryRun { store.beginOwnerLRUWalk() }
        defer { if walks && !dryRun { store.endOwnerLRUWalk() } }
        // An order changed since the last run (and maybe back) leaves its state behind; a
        // dry run forgets it in the transaction it rolls back, so it plans what the real one does.
        let changes = store.state.withLock { $0.orderChanges != $0.orderChangesForgotten ? $0.orderChanges : nil }
        if let changes, !dryRun, !store.isReadOnly {
            try store.write { tx in try EvictionQueues.forgetOrder(tx.db) }
            store.state.withLock { $0.orderChangesForgotten = max($0.orderChangesForgotten, changes) }
        }
        // Shared files whose other names went leave the list (SharedFiles.swift), in commits of
        // their own: they count nothing, but a list that only grew would be read by every count.
        // Every commit drops the entries its rows leave, so only an earlier version (or a
        // daemon from before that) leaves any: looked for once after the open.
        if !dryRun, !store.isReadOnly, !store.state.withLock({ $0.sharedListChecked }) {
            if try store.read({ try SharedFiles.stale($0.db) }) {
                var after: (Int64, Int64)? = (.min, .min)
                while let from = after {
                    after = try store.write { tx in try SharedFiles.prune(after: from, limit: 10_000, tx.db) }.value
                }
            }
            store.state.withLock { $0.sharedListChecked = true }
        }
        return try store.withMappedWriter {
            try runSteps(steps, buildingOwnerLRU: walks, forgettingOrder: changes != nil)
        }
    }

    private func runSteps(_ steps: [PolicyStep], buildingOwnerLRU: Bool, forgettingOrder: Bool) throws -> PolicyPlan {
        if dryRun {
            do {
                try store.write { tx in
                    if forgettingOrder { try EvictionQueues.forgetOrder(tx.db) }
                    if buildingOwnerLRU { try IndexTable.createDefaultOwnerAccessed(tx.db) }
                    var batches = 0
                    steps: for step in steps {
                        var done = false
                        while !done {
                            if let limit = dryRunBatches, batches >= limit {
                                plan.truncated = true
                                break steps
                            }
                            startBatch()
                            done = try step.advance(tx, self)
                            batches += 1
                            report(step)
                        }
                    }
                    throw DryRunFinished()  // rolls the whole plan back
                }
            } catch is DryRunFinished {}
            return plan
        }
        // Earlier batches' files are unlinked beside each batch (SweepAlongside.swift).
        let alongside = SweepAlongside(store, limit: max(1000, 2 * batch))
        for step in steps {
            var done = false
            while !done {
                startBatch()
                placedInBatch = false
                recordedInBatch = false
                let before = plan.mark
                do {
                    // Leases held back since the batch's first look at them go on after its commit.
                    defer { endHold() }
                    // Touches made since the last batch, so that none of them is evicted by an
                    // order read before it (a long run would otherwise go by its first flush).
                    if !store.isReadOnly { try store.flushAccesses() }
                    try alongside.prepare()
                    let c = try store.write { tx in
                        let swept = try alongside.around(tx.db) { done = try step.advance(tx, self) }
                        // No empty commits. One that only records unlinks or places objects
                        // in an order's queues deleted nothing, but it is a commit all the same.
                        if deletedInBatch == 0 {
                            if swept || placedInBatch || recordedInBatch { return }
                            throw NothingDeleted()
                        }
                        store.state.withLock { $0.policyBatchDecided }?()
                        try count(since: before, tx.db)
                    }
                    plan.sweep = alongside.committed()
                    // Every commit is the run's (the caller notes it, and a later failure then
                    // still reports what the earlier ones did, their unlinks among it).
                    plan.commits.append(c.report)
                } catch is NothingDeleted {
                    let skipped = plan.skipped  // what it passed over still tells why nothing went
                    plan.rollBack(to: before)
                    plan.skipped = skipped
                } catch {
                    plan.rollBack(to: before)  // that batch rolled back; earlier batches stand
                    if plan.commits.isEmpty { throw error }
                    throw PolicyRunFailure(completed: plan, underlying: error)
                }
                report(step)
            }
        }
        return plan
    }

    /// Adds this batch to the store's counters (`stats`): objects by reason, bytes queued.
    private func count(since before: PolicyPlan.Mark, _ db: Database) throws {
        let added = plan.objects[before.objects...]
        var byReason = [EvictionReason: Int64]()
        for o in added { byReason[o.reason, default: 0] += 1 }
        var counts = ["policy_bytes": plan.bytes - before.bytes, "policy_deleted": Int64(added.count)]
        for (reason, n) in byReason { counts["policy_deleted_" + reason.rawValue] = n }
        for (name, n) in counts { try Store.bump(db, name, by: n) }
    }

    private func endHold() {
        guard holdingLeases else { return }
        holdingLeases = false
        store.leases.endPolicyBatch()
    }

    private func report(_ step: PolicyStep) {
        progress?(PolicyProgress(phase: step.phase, deleted: plan.objects.count, bytes: plan.bytes))
    }

    /// What a policy must not delete, now (leases may come and go between batches). A real
    /// batch holds new leases back from here to its commit: none can be answered
    /// between this snapshot and the deletions it allows. A dry run rolls back: no need.
    func protection() -> EvictionGuard {
        if !dryRun && !holdingLeases {
            store.leases.beginPolicyBatch()
            holdingLeases = true
        }
        let leased = store.leases.snapshot()
        return EvictionGuard(oldEnough: oldEnough, objects: leased.objects, files: leased.files)
    }

    /// Objects already counted in `plan.skipped`.
    private var skippedIDs = Set<Int64>()

    /// Deletes `ids` for `reason` if nothing protected would go, and records it in the plan;
    /// a refusal is counted in `plan.skipped` against the first id. Its work is charged to
    /// the batch. A group may use what is left of the budget (undone, its objects may still go
    /// one at a time); so may one object after others in the batch, or it is undone and
    /// `deferred`, and the batch is spent. The first object a batch deletes goes
    /// whatever its rules reach, and so does one that is not `deferrable`: a deletion's rules
    /// cannot be split, and a run must be able to delete every object it may (docs/DESIGN.md).
    func evict(
        _ tx: WriteTransaction, _ ids: [Int64], reason: EvictionReason, guard g: EvictionGuard, detail: String? = nil,
        known: [Int64: DeletedDetail] = [:], deferrable: Bool = true
    ) throws -> EvictionEffect? {
        var refusal: SkipReason?
        var budget = EvictionBudget()
        let left = max(0, workBudget - workInBatch)
        if ids.count > 1 || (deferrable && deletedInBatch > 0) {
            budget.limit = left
        }
        deferred = false
        let effect = try tx.evict(ids, guard: g, refusal: &refusal, known: known, budget: &budget)
        workInBatch += budget.spent
        guard let effect else {
            if budget.exceeded {
                deferred = true
                if ids.count == 1 { workInBatch = max(workInBatch, workBudget) }
            }
            // A group refused goes one at a time next, where its protected object is counted.
            if let refusal, ids.count == 1, let id = ids.first { skip(id, refusal) }
            return nil
        }
        if budget.spent > workBudget {
            plan.oversized += 1
            if plan.firstOversized == nil { plan.firstOversized = effect.deleted.first?.ref }
        }
        record(effect, requested: Set(ids), reason: reason, detail: detail)
        deletedInBatch += effect.deleted.count
        return effect
    }

    /// Counts an object passed over, once per run.
    func skip(_ id: Int64, _ why: SkipReason) {
        if skippedIDs.insert(id).inserted { plan.skipped[why, default: 0] += 1 }
    }

    /// Adds an effect to the plan: each file's bytes go to the first deleted object that held it.
    private func record(_ effect: EvictionEffect, requested: Set<Int64>, reason: EvictionReason, detail: String?) {
        var bytes = [Int64](repeating: 0, count: effect.deleted.count)
        // One holder per queued file, or the walk over the removed edges: a file left out of
        // the plan would be unlinked unreported.
        if let holders = effect.holders, holders.count == effect.files.count {
            for (f, i) in zip(effect.files, holders) {
                bytes[i] = bytes[i].adding(saturating: f.size)
                plan.files.append(f.path)
                plan.bytes = plan.bytes.adding(saturating: f.size)
            }
        } else {
            attribute(effect, to: &bytes)
        }
        for (i, d) in effect.deleted.enumerated() {
            let asked = requested.contains(d.id)
            plan.objects.append(
                PlannedDeletion(
                    ref: d.ref, reason: asked ? reason : .cascade, bytes: bytes[i], detail: asked ? detail : nil))
        }
    }

    /// Adds `effect`'s files to the plan, their bytes to the objects that held them.
    private func attribute(_ effect: EvictionEffect, to bytes: inout [Int64]) {
        // Objects and paths compare as bytes (String equality is canonical equivalence);
        // holders and bytes by position in `effect.deleted` (its refs are distinct, as bytes).
        // Walked backwards so that the first object, and the first edge, wins.
        var position = [ObjectRefKey: Int](minimumCapacity: effect.deleted.count)
        for (i, d) in effect.deleted.enumerated().reversed() { position[ObjectRefKey(d.ref)] = i }
        var holder = [UTF8Key: Int](minimumCapacity: effect.files.count)
        for r in effect.edgesRemoved.reversed() {
            if case .file(let p) = r.edge.destination, let i = position[ObjectRefKey(r.edge.source)] {
                holder[UTF8Key(p)] = i
            }
        }
        for f in effect.files {
            if let i = holder[UTF8Key(f.path)] ?? (effect.deleted.isEmpty ? nil : 0) {
                bytes[i] = bytes[i].adding(saturating: f.size)
            }
            plan.files.append(f.path)
            plan.bytes = plan.bytes.adding(saturating: f.size)
        }
    }

    /// Candidates after a cursor, in `order` (a column), with an extra SQL condition that an
    /// index can serve (a range, an owner) and a `filter` read for each row (a collection, a
    /// filesystem): object rows, which carry the built-in index's columns and SQLite indexes.
    /// Young and pinned objects come too, with why they stay (`held`), and rows the filter
    /// leaves out (`wanted` false), so that a walk charges each against its budget: SQLite
    /// would pass over any number of them inside one query, holding the writer
    /// (docs/DESIGN.md, Dry runs). Leased ones are filtered by the caller's guard.
    /// Each comes with what a deletion records of it (`detail`), read from the same row, so
    /// that a deletion in this transaction need not read the row again (`evict(known:)`).
    func candidates(
        _ tx: WriteTransaction, order: String, after cursor: (Double, Int64)?, condition: String = "",
        arguments: StatementArguments = [], filter: String = "", filterArguments: StatementArguments = [],
        limit: Int
    ) throws -> [PolicyCandidate] {
        var rows = [PolicyCandidate]()
        rows.reserveCapacity(min(limit, 4096))
        // After a cursor, the rest of its key's run first, then the keys after it: one range
        // `key >= ? AND (key > ? OR id > ?)` is no seek on the id, and read again from the
        // run's start at every query (180,000 objects put in one second: each batch of a
        // walk over them read them all).
        for sameKey in cursor == nil ? [false] : [true, false] where rows.count < limit {
            let (sql, args) = PolicyRun.candidateQuery(
                order: order, after: cursor, sameKey: sameKey, condition: condition, arguments: arguments,
                filter: filter, filterArguments: filterArguments, limit: limit - rows.count)
            try tx.db.cachedStatement(sql: sql).forEachRawRow(args) { r in
                let id = r.int64(0)
                let ref = ObjectRef(r.text(1) ?? "", r.text(2) ?? "")
                let pinned = r.int64(6) != 0
                let created = r.double(5)
                let detail = DeletedDetail(id: id, ref: ref, owner: r.text(4) ?? "", pinned: pinned, created: created)
                let held: SkipReason? = pinned ? .pinned : !oldEnough.isOld(created) ? .tooYoung : nil
                rows.append(
                    PolicyCandidate(
                        id: id, ref: ref, key: r.double(3), detail: detail, held: held, wanted: r.int64(7) != 0))
            }
        }
        return rows
    }
}

/// A row a policy walk looks at (`PolicyRun.candidates`).
struct PolicyCandidate {
    var id: Int64
    var ref: ObjectRef
    /// Its value in the walk's order, for the cursor.
    var key: Double
    var detail: DeletedDetail
    /// Why it stays (pinned, too young), if it does.
    var held: SkipReason?
    /// False if the step's filter leaves it out: looked at, but no candidate of the step.
    var wanted: Bool
}

extension PolicyRun {
    /// The SQL of `candidates` (a query plan test reads it: it must walk an index in order).
    /// The filter is a column, not a clause: a row it leaves out still comes back, counted.
    /// After a cursor, `sameKey` reads the rest of the cursor key's run, else the keys after it.
    static func candidateQuery(
        order: String, after cursor: (Double, Int64)?, sameKey: Bool = false, condition: String,
        arguments: StatementArguments, filter: String = "", filterArguments: StatementArguments = [], limit: Int
    ) -> (String, StatementArguments) {
        var sql = """
            SELECT d.id, d.collection, d.key, d.\(order), d.owner, d.created, d.pinned, \(filter.isEmpty ? "1" : "(\(filter))")
            FROM object d
            """
        var clauses = [String]()
        var args = filterArguments
        if let cursor, sameKey {
            clauses.append("d.\(order) = ? AND d.id > ?")
            args += [cursor.0, cursor.1]
        } else if let cursor {
            clauses.append("d.\(order) > ?")
            args += [cursor.0]
        }
        if !condition.isEmpty { clauses.append(condition) }
        if !clauses.isEmpty { sql += " WHERE " + clauses.joined(separator: " AND ") }
        sql += " ORDER BY d.\(order), d.id LIMIT ?"
        args += arguments
        args += [limit]
        return (sql, args)
    }
}
