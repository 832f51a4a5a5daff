// Running lifecycle policies (SPEC §9). A run is a list of steps (TTL expiry, quotas, the
// byte budget, free space, an explicit evict or expire); each step deletes at most `batch`
// objects per write transaction, so writers wait for one batch, never for the whole run. A
// dry run does the same batches in one transaction and rolls it back: the plan it returns
// is, by construction, what the real run of an unchanged store deletes. Every decision uses
// one clock reading taken at the start, so both runs see the same ages.

import Foundation
import GRDB
import JSON

extension Store {
    /// Applies the configured `[policy]`: TTLs, then quotas, then the byte budget, then
    /// `min_free`. With no policy configured, nothing happens.
    /// On a full disk a real run may use the reserve (Store+Reserve.swift): when its first batch
    /// cannot commit, the run starts again once the reserve is released. So may `evict` and `expire`.
    public func enforce(dryRun: Bool = false, progress: (@Sendable (PolicyProgress) -> Void)? = nil) throws -> PolicyPlan {
        try freeingSpace(dryRun ? nil : "a policy run") { try enforceOnce(dryRun: dryRun, progress: progress) }
    }

    private func enforceOnce(dryRun: Bool, progress: (@Sendable (PolicyProgress) -> Void)?) throws -> PolicyPlan {
        guard let policy else { return PolicyPlan(dryRun: dryRun) }
        let run = PolicyRun(store: self, policy: policy, dryRun: dryRun, progress: progress)
        var steps = [PolicyStep]()
        for ttl in policy.ttls {
            if let idle = ttl.maxIdle { steps.append(ExpireStep(run, collection: ttl.collection, idle: idle)) }
            if let age = ttl.maxAge { steps.append(ExpireStep(run, collection: ttl.collection, age: age)) }
        }
        if !policy.quotas.isEmpty { steps.append(QuotaStep(policy.quotas)) }
        if let max = policy.maxBytes {
            // Near Int64.max the share rounds up past what an Int64 holds (and would trap).
            let share = Double(max) * policy.lowWater
            steps.append(BudgetStep(max: max, target: share < Double(Int64.max) ? Int64(share) : max))
        }
        if let minFree = policy.minFree {
            // Files recorded before a filesystem was numbered anew are on it too (DeviceRenumbering.swift).
            let renumbered = state.withLock { $0.renumbered }
            for device in roots.devices() {
                let earlier = renumbered.filter { $0.value == device }.map(\.key).sorted()
                steps.append(MinFreeStep(device: device, earlier: earlier, minFree: minFree))
            }
        }
        return try run.run(steps)
    }

    /// Evicts least recently accessed objects (of `owner`, or anyone's) until at least
    /// `bytes` will be freed; without `bytes`, every evictable object of `owner`.
    public func evict(
        bytes: Int64?, owner: String?, dryRun: Bool = false, progress: (@Sendable (PolicyProgress) -> Void)? = nil
    ) throws -> PolicyPlan {
        guard bytes != nil || owner != nil else { throw StoreError(.invalidParams, "evict needs bytes, owner or both") }
        if let bytes, bytes <= 0 { throw StoreError(.invalidParams, "bytes must be positive") }
        return try freeingSpace(dryRun ? nil : "an eviction") {
            try evictOnce(bytes: bytes, owner: owner, dryRun: dryRun, progress: progress)
        }
    }

    private func evictOnce(
        bytes: Int64?, owner: String?, dryRun: Bool, progress: (@Sendable (PolicyProgress) -> Void)?
    ) throws -> PolicyPlan {
        let run = PolicyRun(store: self, policy: policy ?? PolicyConfiguration(), dryRun: dryRun, progress: progress)
        return try run.run([EvictStep(bytes: bytes, owner: owner)])
    }

    /// Expires objects (of `collection`, or all) created more than `olderThan` seconds ago or
    /// not accessed for `idle` seconds; with neither, applies the configured TTLs.
    public func expire(
        collection: String?, olderThan: Double?, idle: Double?, dryRun: Bool = false,
        progress: (@Sendable (PolicyProgress) -> Void)? = nil
    ) throws -> PolicyPlan {
        try freeingSpace(dryRun ? nil : "an expiry") {
            try expireOnce(collection: collection, olderThan: olderThan, idle: idle, dryRun: dryRun, progress: progress)
        }
    }

    private func expireOnce(
        collection: String?, olderThan: Double?, idle: Double?, dryRun: Bool,
        progress: (@Sendable (PolicyProgress) -> Void)?
    ) throws -> PolicyPlan {
        let policy = self.policy ?? PolicyConfiguration()
        let run = PolicyRun(store: self, policy: policy, dryRun: dryRun, progress: progress)
        var steps = [PolicyStep]()
        for d in [olderThan, idle] { if let d, !(d >= 0) { throw StoreError(.invalidParams, "durations must not be negative") } }
        if olderThan == nil && idle == nil {
            let ttls = policy.ttls.filter { collection == nil || $0.collection == collection }
            guard !ttls.isEmpty else {
                throw StoreError(.invalidParams, "no ttl is configured\(collection.map { " for \($0)" } ?? ""): give older_than or idle")
            }
            for ttl in ttls {
                if let idle = ttl.maxIdle { steps.append(ExpireStep(run, collection: ttl.collection, idle: idle)) }
                if let age = ttl.maxAge { steps.append(ExpireStep(run, collection: ttl.collection, age: age)) }
            }
        } else {
            if let idle { steps.append(ExpireStep(run, collection: collection, idle: idle)) }
            if let olderThan { steps.append(ExpireStep(run, collection: collection, age: olderThan)) }
        }
        return try run.run(steps)
    }
}

/// One policy, advanced a batch at a time.
protocol PolicyStep: AnyObject {
    /// The phase name progress reports.
    var phase: String { get }
    /// Deletes up to `run.batch` objects; true when the step has nothing more to do.
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
    let minAge: Double
    let progress: (@Sendable (PolicyProgress) -> Void)?
    private(set) var plan: PolicyPlan
    /// Objects deleted in the current transaction (a step stops at `batch`).
    var deletedInBatch = 0
    /// True while this batch holds new object leases back (`Protections.beginPolicyBatch`).
    private var holdingLeases = false

    init(store: Store, policy: PolicyConfiguration, dryRun: Bool, progress: (@Sendable (PolicyProgress) -> Void)?) {
        self.store = store
        now = store.configuration.clock()
        batch = max(1, policy.batch)
        minAge = policy.minAge
        self.dryRun = dryRun
        self.progress = progress
        plan = PolicyPlan(dryRun: dryRun)
    }

    var batchFull: Bool { deletedInBatch >= batch }

    func run(_ steps: [PolicyStep]) throws -> PolicyPlan {
        // A dry run builds the per-owner LRU index inside its own transaction, which it rolls
        // back: it changes nothing, not even the schema (Store+OwnerLRU.swift).
        let walks = steps.contains(where: \.walksOwnerLRU)
        if walks && !dryRun { store.beginOwnerLRUWalk() }
        defer { if walks && !dryRun { store.endOwnerLRUWalk() } }
        return try store.withMappedWriter { try runSteps(steps, buildingOwnerLRU: walks) }
    }

    private func runSteps(_ steps: [PolicyStep], buildingOwnerLRU: Bool) throws -> PolicyPlan {
        if dryRun {
            do {
                try store.write { tx in
                    if buildingOwnerLRU { try IndexTable.createDefaultOwnerAccessed(tx.db) }
                    for step in steps {
                        var done = false
                        while !done {
                            deletedInBatch = 0
                            done = try step.advance(tx, self)
                            report(step)
                        }
                    }
                    throw DryRunFinished()  // rolls the whole plan back
                }
            } catch is DryRunFinished {}
            return plan
        }
        for step in steps {
            var done = false
            while !done {
                deletedInBatch = 0
                let before = plan
                do {
                    // Leases held back since the batch's first look at them go on after its commit.
                    defer { endHold() }
                    let c = try store.write { tx in
                        done = try step.advance(tx, self)
                        if deletedInBatch == 0 { throw NothingDeleted() }  // no empty commits
                        store.state.withLock { $0.policyBatchDecided }?()
                        try count(since: before, tx.db)
                    }
                    plan.commits.append(c.report)
                } catch is NothingDeleted {
                    plan = before
                } catch {
                    plan = before  // that batch rolled back; earlier batches stand
                    if plan.commits.isEmpty { throw error }
                    throw PolicyRunFailure(completed: plan, underlying: error)
                }
                report(step)
            }
        }
        return plan
    }

    /// Adds this batch to the store's counters (`stats`): objects by reason, bytes queued.
    private func count(since before: PolicyPlan, _ db: Database) throws {
        var counts = ["policy_bytes": plan.bytes - before.bytes]
        for o in plan.objects[before.objects.count...] {
            counts["policy_deleted", default: 0] += 1
            counts["policy_deleted_" + o.reason.rawValue, default: 0] += 1
        }
        for (name, n) in counts { try Store.bump(db, name, by: n) }
    }

    private func endHold() {
        guard holdingLeases else { return }
        holdingLeases = false
        store.protections.endPolicyBatch()
    }

    private func report(_ step: PolicyStep) {
        progress?(PolicyProgress(phase: step.phase, deleted: plan.objects.count, bytes: plan.bytes))
    }

    /// What a policy must not delete, now (leases may come and go between batches). A real
    /// batch holds new object leases back from here to its commit: none can be answered
    /// between this snapshot and the deletions it allows. A dry run rolls back: no need.
    func protection() -> EvictionGuard {
        if !dryRun && !holdingLeases {
            store.protections.beginPolicyBatch()
            holdingLeases = true
        }
        let leased = store.protections.snapshot()
        return EvictionGuard(createdBefore: now - minAge, objects: leased.objects, files: leased.files)
    }

    /// Deletes `ids` for `reason` if nothing protected would go, and records it in the plan.
    func evict(_ tx: WriteTransaction, _ ids: [Int64], reason: EvictionReason, guard g: EvictionGuard) throws -> EvictionEffect? {
        guard let effect = try tx.evict(ids, guard: g) else { return nil }
        record(effect, requested: Set(ids), reason: reason)
        deletedInBatch += effect.deleted.count
        return effect
    }

    /// Adds an effect to the plan: each file's bytes go to the first deleted object that held it.
    private func record(_ effect: EvictionEffect, requested: Set<Int64>, reason: EvictionReason) {
        var holder = [[UInt8]: ObjectRef]()
        let deletedRefs = Set(effect.deleted.map(\.ref))
        for r in effect.edgesRemoved {
            if case .file(let p) = r.edge.destination, deletedRefs.contains(r.edge.source) {
                let key = Array(p.utf8)
                if holder[key] == nil { holder[key] = r.edge.source }
            }
        }
        var bytes = [ObjectRef: Int64]()
        for f in effect.files {
            let owner = holder[Array(f.path.utf8)] ?? effect.deleted.first?.ref
            if let owner { bytes[owner, default: 0] += f.size }
            plan.files.append(f.path)
            plan.bytes += f.size
        }
        for d in effect.deleted {
            plan.objects.append(PlannedDeletion(
                ref: d.ref, reason: requested.contains(d.id) ? reason : .cascade, bytes: bytes[d.ref] ?? 0))
        }
    }

    /// Evictable candidates after a cursor, in `order` (a column), with an extra SQL
    /// condition: object rows, which carry the built-in index's columns and SQLite indexes.
    /// Young and pinned objects never come back; leased ones are filtered by the caller's guard.
    func candidates(
        _ tx: WriteTransaction, order: String, after cursor: (Double, Int64)?, condition: String = "",
        arguments: StatementArguments = [], limit: Int
    ) throws -> [(id: Int64, ref: ObjectRef, key: Double)] {
        let (sql, args) = PolicyRun.candidateQuery(
            order: order, createdBefore: now - minAge, after: cursor, condition: condition, arguments: arguments,
            limit: limit)
        return try Row.fetchAll(tx.db.cachedStatement(sql: sql), arguments: args).map {
            (id: $0[0], ref: ObjectRef($0[1], $0[2]), key: $0[3])
        }
    }
}

extension PolicyRun {
    /// The SQL of `candidates` (a query plan test reads it: it must walk an index in order).
    static func candidateQuery(
        order: String, createdBefore: Double, after cursor: (Double, Int64)?, condition: String,
        arguments: StatementArguments, limit: Int
    ) -> (String, StatementArguments) {
        var sql = """
            SELECT d.id, d.collection, d.key, d.\(order) FROM object d
            WHERE d.pinned = 0 AND d.created <= ?
            """
        var args: StatementArguments = [createdBefore]
        if let cursor {
            sql += " AND d.\(order) >= ? AND (d.\(order) > ? OR d.id > ?)"
            args += [cursor.0, cursor.0, cursor.1]
        }
        if !condition.isEmpty { sql += " AND " + condition }
        sql += " ORDER BY d.\(order), d.id LIMIT ?"
        args += arguments
        args += [limit]
        return (sql, args)
    }
}

// MARK: steps

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
        cursor = (last.key, last.id)
        let ids = rows.filter { !g.objects.contains($0.ref) }.map(\.id)
        // The whole batch at once; if something in it is protected, one at a time.
        if !ids.isEmpty, try run.evict(tx, ids, reason: reason, guard: g) == nil {
            for id in ids where !tx.deletedIDs.contains(id) {
                _ = try run.evict(tx, [id], reason: reason, guard: g)
            }
        }
        return rows.count < run.batch
    }
}

/// Evicts least recently accessed objects until a number of bytes is freed.
class BytesStep: PolicyStep {
    var phase: String { "budget" }
    var reason: EvictionReason { .budget }
    private var cursor: (Double, Int64)?
    private var exhausted = false

    /// Bytes still to free (≤ 0: done), computed at the start of each batch.
    func need(_ tx: WriteTransaction, _ run: PolicyRun) throws -> Int64 { 0 }
    /// An extra condition on candidates.
    var condition: (String, StatementArguments) { ("", []) }
    /// A class member, so a subclass's answer is the one the protocol sees.
    var walksOwnerLRU: Bool { false }
    /// The bytes of an effect that count toward the need.
    func counted(_ effect: EvictionEffect) -> Int64 { effect.files.reduce(0) { $0 + $1.size } }

    func advance(_ tx: WriteTransaction, _ run: PolicyRun) throws -> Bool {
        var need = try need(tx, run)
        var g = run.protection()
        g.needsFiles = true  // an object that holds no file frees nothing: bytes never justify it
        while need > 0 && !exhausted && !run.batchFull {
            let rows = try run.candidates(
                tx, order: "accessed", after: cursor, condition: condition.0, arguments: condition.1, limit: 256)
            if rows.isEmpty { exhausted = true }
            for row in rows {
                cursor = (row.key, row.id)
                if g.objects.contains(row.ref) || tx.deletedIDs.contains(row.id) { continue }
                if let effect = try run.evict(tx, [row.id], reason: reason, guard: g) { need -= counted(effect) }
                if need <= 0 || run.batchFull { break }
            }
        }
        return need <= 0 || exhausted
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
        let total = try Int64.fetchOne(tx.db, sql: "SELECT COALESCE(SUM(size), 0) FROM file") ?? 0
        if !started {
            guard total > max else { return 0 }
            started = true
        }
        return total - target
    }
}

/// `min_free` for one filesystem: bytes queued for unlinking there count as freed, unless
/// the next sweep will not free them: deferred (a lease, an open file), failed, or leased now.
final class MinFreeStep: BytesStep {
    let device: Int64
    /// The filesystem's device and the earlier numbers it had, which files recorded before it
    /// was numbered anew still carry.
    let devices: [Int64]
    let minFree: Int64
    override var phase: String { "min_free" }
    override var reason: EvictionReason { .minFree }

    init(device: Int64, earlier: [Int64] = [], minFree: Int64) {
        self.device = device
        devices = [device] + earlier
        self.minFree = minFree
    }

    /// "(?, ?)": one placeholder per number in `devices`.
    private var placeholders: String { "(" + devices.map { _ in "?" }.joined(separator: ", ") + ")" }

    override func need(_ tx: WriteTransaction, _ run: PolicyRun) throws -> Int64 {
        guard let free = tx.store.roots.freeBytes(device: device) else { return 0 }
        // A row as queued has never been tried and is due by queued_at + unlink_delay; a
        // deferral moves next_attempt past that, a failure counts an attempt.
        let due = "attempts = 0 AND next_attempt <= MAX(?1, queued_at + ?2)"
        let now = tx.store.configuration.clock()
        let delay = tx.store.configuration.unlinkDelay
        // A file leased since it was queued stays until the lease ends. One pass over the
        // queue however many files are leased (SQLite builds a transient index for NOT IN).
        let leased = JSONValue.array(tx.store.protections.snapshot().files.map { .string(String(decoding: $0, as: UTF8.self)) })
        let queued = try Int64.fetchOne(
            tx.db,
            sql: """
                SELECT COALESCE(SUM(size), 0) FROM unlink_queue WHERE \(due) AND path NOT IN (SELECT value FROM json_each(?3))
                AND device IN \(placeholders)
                """, arguments: StatementArguments([now, delay, leased.serialized()] as [DatabaseValueConvertible]) + StatementArguments(devices)) ?? 0
        return minFree - free - queued
    }

    override var condition: (String, StatementArguments) {
        ("EXISTS (SELECT 1 FROM edge e JOIN file f ON f.id = e.dst WHERE e.src = d.id AND e.is_file = 1 AND f.device IN \(placeholders))",
         StatementArguments(devices))
    }

    override func counted(_ effect: EvictionEffect) -> Int64 {
        effect.files.reduce(0) { $0 + ($1.device.map(devices.contains) == true ? $1.size : 0) }
    }
}

/// `policy.evict`: a number of bytes, from one owner or all; without bytes, all of an owner.
final class EvictStep: BytesStep {
    private var remaining: Int64
    let owner: String?
    override var phase: String { "evict" }
    override var reason: EvictionReason { .evict }

    init(bytes: Int64?, owner: String?) {
        remaining = bytes ?? .max
        self.owner = owner
    }

    override func need(_ tx: WriteTransaction, _ run: PolicyRun) throws -> Int64 { remaining }

    override var walksOwnerLRU: Bool { owner != nil }

    override var condition: (String, StatementArguments) {
        guard let owner else { return ("", []) }
        return ("d.owner = ?", [owner])
    }

    override func counted(_ effect: EvictionEffect) -> Int64 {
        let n = super.counted(effect)
        if remaining != .max { remaining -= n }
        // Without a byte target every object counts, so the step ends only when none is left.
        return remaining == .max ? 0 : n
    }
}
