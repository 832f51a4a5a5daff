// What a `min_free` step counts as freed by the queued unlinks on its filesystem, counted once
// a run (docs/DESIGN.md, Lifecycle policies): grouping every due row by file at every batch
// made a long run quadratic in the queue, with the writer held. The whole queue is counted
// at the step's first batch; each later batch adds the rows queued since (by the run or
// anyone), read by id, and those whose deferral ran out since. Rows that leave the queue are
// not taken off: an unlinked one's bytes show in the free space too, a deferred one's will
// not be freed; both make the count high, never low, so the step may stop early but never
// evicts for bytes that are there. A row made due sooner than it was, or given its device,
// may land where neither window looks (a lease's end reads the clock before the writer is
// free): such writes bump `Store.queueRowsMoved`, and the whole queue is counted again when
// it moved, or when the clock went back. Before the step ends on a count that may read high
// it counts the whole queue again (`MinFreeQueue.count(whole:)`), and goes on from there if
// the floor is still short. A deferred row counts once it is due by both clocks, as the sweep
// takes it; a row stamped before a step back of the wall clock counts as the bound the sweep
// makes at that step leaves it (ClockSteps.swift, Store+ClockSteps.swift); and the whole
// queue is counted again at each step seen.

import GRDB
import Synchronization

/// The bytes queued for unlinking on some devices that the next sweep should free.
final class MinFreeQueue {
    /// "(?, ?)": one placeholder per device.
    private let placeholders: String
    private let devices: [Int64]
    /// The count, high by what left the queue since the whole was counted; nil before then.
    private var bytes: Int64?
    /// The last row id counted, and the clock of the last count (rows deferred to later were
    /// not due then).
    private var seen: Int64 = 0
    private var since = -Double.infinity
    /// The step forward's length (`ClockSteps.Reading.forward`) at the last count: the window
    /// of rows stamped before the step goes on from `since` less it. It moves by the jitter
    /// between the two clocks' reads even without a step, and a window begun at `since` less
    /// the current one left out rows if it shrank.
    private var sinceForward: Double = 0
    /// `Store.queueRowsMoved` when the whole queue was counted.
    private var moved = 0
    /// The clock steps seen when the whole queue was counted (the last step forward's
    /// boundary, the steps back): a later one changes which rows are due.
    private var steps = (boundary: -Double.infinity, back: 0)
    /// Paths of queued rows left out for a lease: when one ends, its rows may count, and
    /// the whole queue is counted again.
    private var heldBack = Set<[UInt8]>()
    /// The count went on incrementally since the whole queue was counted: rows that left the
    /// queue since may make it high.
    private var incremental = false
    /// Evictions were counted down since the whole queue was counted (names of one file taken
    /// in one eviction count each).
    private var evicted = false

    init(devices: [Int64], placeholders: String) {
        self.devices = devices
        self.placeholders = placeholders
    }

    /// A row as queued has never been tried and is due by queued_at + unlink_delay; a
    /// deferral moves next_attempt past that, a failure counts an attempt. A file leased
    /// since it was queued stays until the lease ends. `?1` the clock now, `?2` the delay,
    /// `?3` the leased paths (one pass over the rows however many, SQLite builds a transient
    /// index for NOT IN), then the devices.
    private var due: String { MinFreeQueue.due(placeholders) }

    static func due(_ placeholders: String) -> String {
        """
        attempts = 0 AND next_attempt <= MAX(?1, queued_at + ?2) AND path NOT IN (SELECT value FROM json_each(?3))
            AND device IN \(placeholders)
        """
    }

    /// `due` once the wall clock stepped (`stepArguments` after the devices'): a deferred row is
    /// due when the sweep's window takes it (`Store.sweepWindow`: stamped before the last step
    /// forward, it waits the step out too), and a row stamped after now (before a step back)
    /// counts unless parked: the sweep's bound makes it due within `unlink_delay`. Without a
    /// step, `due` as it always was.
    static func steppedDue(_ placeholders: String) -> String {
        """
        attempts = 0 AND path NOT IN (SELECT value FROM json_each(?3)) AND device IN \(placeholders)
            AND (next_attempt <= queued_at + ?2 OR next_attempt <= ?1 AND (queued_at >= ? OR next_attempt <= ?)
                OR queued_at > ?1 AND next_attempt < ?)
        """
    }

    /// The later batches' filters: rows queued since (ids), and rows deferred whose next
    /// attempt came due since (a window along `unlink_queue_due`; not the ids, which cover
    /// the whole queue).
    static let queuedSince = "id > ? AND id <= ?"
    static let dueAgain = "next_attempt > ? AND next_attempt <= ?1 AND next_attempt > queued_at + ?2 AND +id <= ?"
    /// `dueAgain` after a step forward: a row stamped before it came due since by the clock
    /// less the step (`forward`), so the window along `unlink_queue_due` starts that much
    /// earlier for it. Arguments: since less the last count's forward, the last id, the boundary, since, the
    /// boundary, now less forward.
    static let steppedDueAgain = """
        next_attempt > ? AND next_attempt <= ?1 AND next_attempt > queued_at + ?2 AND +id <= ?
            AND (queued_at >= ? AND next_attempt > ? OR queued_at < ? AND next_attempt <= ?)
        """

    /// The bytes queued, at a batch's start: the whole queue at the first batch, when a lease
    /// that kept some rows out has ended, when a row was made due sooner or given its device
    /// (`Store.queueRowsMoved`), or when the clock went back; else the count so far, the rows
    /// queued since (by id) and those whose deferral ran out since (along `unlink_queue_due`).
    func count(_ tx: WriteTransaction) throws -> Int64 {
        let leased = tx.store.leases.snapshot().files
        let clock = tx.store.clocks.read()
        let now = clock.wall
        guard let bytes, heldBack.isSubset(of: leased), now >= since,
            tx.store.queueRowsMoved.load(ordering: .relaxed) == moved,
            steps == (clock.boundary, clock.stepsBack)
        else { return try count(whole: tx, leased, clock: clock) }
        let last = try Int64.fetchOne(tx.db, sql: "SELECT COALESCE(MAX(id), 0) FROM unlink_queue") ?? 0
        let args = arguments(tx, leased, now: now)
        var more: Int64 = 0
        // Queued since: due as queued unless deferred already. A file queued before and again
        // since counts twice: high, never low.
        if last > seen { more = try add(tx, args, clock, MinFreeQueue.queuedSince, [seen, last], leased) }
        // Deferred (a lease, an open file) and due again since the last count: a deferred
        // row's next attempt lies past queued_at + unlink_delay. The steps are the last
        // count's (else the whole was counted), so each row comes due in one window only.
        if now > since {
            let (filter, filterArgs): (String, StatementArguments) =
                clock.steppedForward
                ? (
                    MinFreeQueue.steppedDueAgain,
                    [since - sinceForward, seen, clock.boundary, since, clock.boundary, now - clock.forward]
                )
                : (MinFreeQueue.dueAgain, [since, seen])
            more = more.adding(saturating: try add(tx, args, clock, filter, filterArgs, leased))
        }
        (self.bytes, seen, since, incremental) = (bytes.adding(saturating: more), max(seen, last), now, true)
        sinceForward = clock.forward
        return self.bytes ?? 0
    }

    /// Whether `clock` saw a step of the wall clock: then `steppedDue` decides.
    private static func stepped(_ clock: ClockSteps.Reading) -> Bool { clock.steppedForward || clock.stepsBack > 0 }

    /// The due test's SQL at `clock`, and its arguments after the devices'.
    private func dueTest(_ clock: ClockSteps.Reading) -> (String, StatementArguments) {
        guard MinFreeQueue.stepped(clock) else { return (due, []) }
        let fresh = clock.wall - clock.forward
        return (MinFreeQueue.steppedDue(placeholders), [clock.boundary, fresh, Store.parkedUntil])
    }

    /// The bytes of the due rows `filter` (with `filterArgs`) keeps, and their leased paths held back.
    private func add(
        _ tx: WriteTransaction, _ args: StatementArguments, _ clock: ClockSteps.Reading, _ filter: String,
        _ filterArgs: StatementArguments, _ leased: Set<[UInt8]>
    )
        throws -> Int64
    {
        if !leased.isEmpty {
            try hold(
                tx, args + filterArgs,
                "SELECT DISTINCT path FROM unlink_queue WHERE path IN (SELECT value FROM json_each(?3)) AND device IN \(placeholders) AND \(filter)"
            )
        }
        let (due, dueArgs) = dueTest(clock)
        return try Int64.fetchOne(
            tx.db, sql: MinFreeQueue.sum(due + " AND " + filter), arguments: args + dueArgs + filterArgs) ?? 0
    }

    /// Whether the count may read high where `need` reads it met: it went on incrementally
    /// since the whole was counted, or evictions counted down while some file has several names.
    func mayBeOff(_ tx: WriteTransaction) throws -> Bool {
        try incremental || (evicted && SharedFiles.any(tx.db))
    }

    /// An eviction was counted down.
    func noteEvicted() { evicted = true }

    /// Counts the whole queue, and goes on from it: a file queued under several names once, at
    /// its largest recorded size (as the other totals count it); a row without an inode
    /// number counts alone.
    func count(
        whole tx: WriteTransaction, _ leased: Set<[UInt8]>? = nil, clock: ClockSteps.Reading? = nil
    ) throws -> Int64 {
        let leased = leased ?? tx.store.leases.snapshot().files
        let clock = clock ?? tx.store.clocks.read()
        let now = clock.wall
        // Read in this write transaction: no bump can come between it and the count.
        moved = tx.store.queueRowsMoved.load(ordering: .relaxed)
        steps = (clock.boundary, clock.stepsBack)
        let last = try Int64.fetchOne(tx.db, sql: "SELECT COALESCE(MAX(id), 0) FROM unlink_queue") ?? 0
        let args = arguments(tx, leased, now: now)
        let (due, dueArgs) = dueTest(clock)
        let total = try Int64.fetchOne(tx.db, sql: MinFreeQueue.sum(due), arguments: args + dueArgs) ?? 0
        heldBack = []
        if !leased.isEmpty {
            // Along the index on path: the leased paths, not the queue.
            try hold(
                tx, args,
                "SELECT DISTINCT q.path FROM json_each(?3) j CROSS JOIN unlink_queue q ON q.path = j.value WHERE q.device IN \(placeholders)"
            )
        }
        (bytes, seen, since, incremental, evicted) = (total, last, now, false, false)
        sinceForward = clock.forward
        return total
    }

    private func arguments(_ tx: WriteTransaction, _ leased: Set<[UInt8]>, now: Double) -> StatementArguments {
        let paths = JSONValue.array(leased.map { .string(String(decoding: $0, as: UTF8.self)) })
        return StatementArguments(
            [now, tx.store.configuration.unlinkDelay, paths.serialized()] as [DatabaseValueConvertible])
            + StatementArguments(devices)
    }

    private func hold(_ tx: WriteTransaction, _ args: StatementArguments, _ sql: String) throws {
        for path in try String.fetchAll(tx.db, sql: sql, arguments: args) { heldBack.insert(Array(path.utf8)) }
    }

    /// SQL: the bytes of the rows `filter` keeps, grouped by file.
    static func sum(_ filter: String) -> String {
        """
        SELECT \(Sizes.sum("s")) FROM (SELECT MAX(size) AS s FROM unlink_queue WHERE \(filter)
            GROUP BY \(SharedFiles.identity("unlink_queue")), CASE WHEN inode IS NULL THEN id END)
        """
    }
}
