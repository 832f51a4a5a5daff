// Steps that evict least recently accessed objects until some number of bytes is freed:
// `BytesStep` walks the order and counts; `BudgetStep` (max_bytes down to the low-water
// mark), `MinFreeStep` (a filesystem's free-space floor) and `EvictStep` (an explicit
// `evict`) say how many bytes and of which objects.

import GRDB

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
        let leased = JSONValue.array(
            tx.store.leases.snapshot().files.map { .string(String(decoding: $0, as: UTF8.self)) })
        let queued =
            try Int64.fetchOne(
                tx.db,
                sql: """
                    SELECT COALESCE(SUM(size), 0) FROM unlink_queue WHERE \(due) AND path NOT IN (SELECT value FROM json_each(?3))
                    AND device IN \(placeholders)
                    """,
                arguments: StatementArguments([now, delay, leased.serialized()] as [DatabaseValueConvertible])
                    + StatementArguments(devices)) ?? 0
        return minFree - free - queued
    }

    override var condition: (String, StatementArguments) {
        (
            "EXISTS (SELECT 1 FROM edge e JOIN file f ON f.id = e.dst WHERE e.src = d.id AND e.is_file = 1 AND f.device IN \(placeholders))",
            StatementArguments(devices)
        )
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
