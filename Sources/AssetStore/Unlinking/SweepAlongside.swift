// A policy run's unlinks beside its batches (assetd(8), The unlink queue): while batch k is
// decided and deleted in its write transaction, the files the run's earlier batches queued are
// unlinked on other threads, then recorded in the same transaction. An unlink waits on the
// disk and a decision on the CPU, so the run costs about what its unlinks cost, not the sum.
// Only rows whose commit is durable are taken, as the sweep takes them; the last batch's files
// are left to the sweep after the run. A crash before the batch commits leaves their rows
// queued: the next sweep finds those files gone and finishes the rows.

import Foundation
import GRDB
import Synchronization

/// The unlinks one policy run does beside its batches, and what they came to.
final class SweepAlongside {
    private let store: Store
    /// Rows taken per batch at most.
    private let limit: Int
    /// Queue rows after this id are the run's (or came since); nil before the first batch.
    private var lastID: Int64?
    private var renumbered: RenumberedDevices?
    /// What the committed batches' unlinks came to; nil while they did none.
    private var report: SweepReport?
    /// What the current batch's came to, kept once it commits.
    private var uncommitted: (report: SweepReport, lastID: Int64)?
    /// No row queued since the run began is due before this, on the steady clock: a row is
    /// due `unlink_delay` after its deleting transaction at the earliest (an ended lease never
    /// brings it sooner). Until then the queue is not read: the read would find nothing due
    /// after going through every row the run queued, at every batch. On the wall clock, a
    /// step back kept the run from reading the queue for the step's length, and a step forward
    /// had it read a queue the due test (which waits the step out) finds nothing due in.
    private var firstDue = -Double.infinity

    init(_ store: Store, limit: Int) {
        self.store = store
        self.limit = limit
    }

    /// Before a batch's transaction: the earlier batches' commits made durable (with
    /// durability "normal" they were not synced), so their files may go beside this batch.
    func prepare() throws {
        guard lastID != nil else { return }
        try store.makeDurable()
        // A step back of the wall clock left the rows queued before it due a step later: they
        // are bounded as the sweep bounds them, else none is due for the rest of the run
        // (Store+ClockSteps.swift). Nothing to do without a step back. Its writes fail on a
        // full disk (it has no reserve), as the sweep's do: the run goes on, the rows only later.
        try? store.boundQueue(after: store.clocks.read())
    }

    /// Runs `body` (a batch's decisions and deletions) in `db`'s transaction while the due
    /// files queued by durable commits since the run began are unlinked beside it, then
    /// records their outcomes in that transaction. True if it took any queue rows.
    func around(_ db: Database, _ body: () throws -> Void) throws -> Bool {
        uncommitted = nil
        guard let after = lastID else {
            lastID = try Int64.fetchOne(db, sql: "SELECT COALESCE(MAX(id), 0) FROM unlink_queue") ?? 0
            // Read after the transaction's time, which stamps the rows: later by the moments between.
            firstDue = store.clocks.read().steady + store.configuration.unlinkDelay
            try body()
            return false
        }
        let clock = store.clocks.read()
        let now = clock.wall
        if clock.steady < firstDue {
            try body()
            return false
        }
        if renumbered == nil { renumbered = try store.noteRootDevices(db, now: now) }
        // No owed look is taken in the run's transaction: their rows are left to the sweep.
        store.alongsideReads.add(1, ordering: .relaxed)
        let b = try store.takeSweepBatch(
            db, after: after, durable: store.durableCommit, now: clock, retryFailed: false, limit: limit,
            renumbered: renumbered ?? RenumberedDevices())
        if b.lastID == nil {
            try body()
            return false
        }
        let unlinks = BackgroundUnlinks.start(store, b.targets)
        do {
            try body()
        } catch {
            _ = unlinks.wait()  // never leave threads unlinking behind a rolled-back batch
            throw error
        }
        var r = report ?? SweepReport()
        let before = r.unlinked.count
        let last = try store.recordSweepBatch(b, unlinks.wait(), db, now: now, report: &r)
        try store.state.withLock { $0.sweptAlongside }?(Array(r.unlinked[before...]))
        uncommitted = (r, last ?? after)
        return true
    }

    /// The batch committed: its unlinks' outcomes stand. Returns what the run's came to so
    /// far, nil if none.
    func committed() -> SweepReport? {
        if let u = uncommitted { (report, lastID) = (u.report, u.lastID) }
        uncommitted = nil
        return report
    }
}

/// `unlinkAll` on a thread of its own, joined by `wait`.
private final class BackgroundUnlinks: Sendable {
    private let outcomes = Mutex<[UnlinkOutcome?]>([])
    private let done = DispatchSemaphore(value: 0)

    static func start(_ store: Store, _ targets: [UnlinkTarget]) -> BackgroundUnlinks {
        let u = BackgroundUnlinks()
        if targets.isEmpty {
            u.done.signal()
            return u
        }
        Thread {
            let result = store.unlinkAll(targets, threads: store.configuration.unlinkThreadsBeside, beforeUnlink: nil)
            u.outcomes.withLock { $0 = result }
            u.done.signal()
        }.start()
        return u
    }

    /// Waits for the unlinks; one outcome per target, in order. Call once.
    func wait() -> [UnlinkOutcome?] {
        done.wait()
        return outcomes.withLock { $0 }
    }
}
