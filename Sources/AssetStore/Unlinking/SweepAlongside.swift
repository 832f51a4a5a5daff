// A policy run's unlinks beside its batches (assetd(8), The unlink queue): while the run decides
// and deletes, the files its earlier batches queued are unlinked on other threads. An unlink
// waits on the disk and a decision on the CPU, so the run costs about what its unlinks cost,
// not the sum. Only rows whose commit is durable are taken, as the sweep takes them; the last
// batch's files are left to the sweep after the run.
//
// Unlinks started in one batch's transaction (which checked that no edge references their
// paths) go on across its commit and are recorded by the next batch's transaction: the run
// holds the writer for a slice of batches (PolicyRun.swift), so no other write, no put taking
// one of those paths again, comes between. The last batch of a slice waits for every unlink
// still under way and records it before it commits; only then is the writer let go. A crash
// before the recording commit leaves their rows queued: the next sweep finds those files gone
// and finishes the rows.

import Foundation
import GRDB
import Synchronization

/// The unlinks one policy run does beside its batches, and what they came to.
final class SweepAlongside {
    private let store: Store
    /// Rows taken per batch at most.
    private let limit: Int
    /// Queue rows after this id are not taken yet (queued by the run, or since); nil before
    /// the first batch.
    private var lastID: Int64?
    private var renumbered: [Int64: Int64]?
    /// What the committed batches' recorded unlinks came to; nil while they recorded none.
    private var report: SweepReport?
    /// What the current batch's transaction recorded, kept once it commits.
    private var uncommitted: SweepReport?
    /// Unlinks started and not yet recorded by a committed transaction, oldest first; the
    /// last may still be under way (the writer is held meanwhile).
    private var open: [Taken] = []
    /// What `open` is once the current batch commits.
    private var openAfterCommit: [Taken] = []
    /// No row queued since the run began is due before this: a row is due `unlink_delay`
    /// after its deleting transaction at the earliest (an ended lease never brings it
    /// sooner). Until then the queue is not read: the read would find nothing due after
    /// going through every row the run queued, at every batch. A row this passes over
    /// (a clock set back) is the sweep's after the run, as the last batch's are.
    private var firstDue = -Double.infinity

    init(_ store: Store, limit: Int) {
        self.store = store
        self.limit = limit
    }

    /// Whether unlinks started by an earlier transaction are still to be recorded: the slice
    /// of batches holding the writer must go on until one records them.
    var hasInFlight: Bool { !open.isEmpty }

    /// Before a batch's transaction: the earlier batches' commits made durable (with
    /// durability "normal" they were not synced), so their files may go beside this batch.
    func prepare() throws {
        if lastID != nil { try store.makeDurable() }
    }

    /// Runs `body` (a batch's decisions and deletions) in `db`'s transaction while the due
    /// files queued by durable commits since the run began are unlinked beside it. Records,
    /// in that transaction, the unlinks an earlier transaction started, and with `drain()`
    /// true after `body`, also those started here (else they go on across this commit).
    /// True if it took or recorded any queue rows. `start` is the transaction's time.
    func around(_ db: Database, start: Double, drain: () -> Bool, _ body: () throws -> Void) throws -> Bool {
        uncommitted = nil
        var fresh: Taken?
        if let after = lastID {
            let now = store.configuration.clock()
            if now >= firstDue {
                if renumbered == nil { renumbered = try store.noteRootDevices(db, now: now) }
                let b = try store.takeSweepBatch(
                    db, after: after, durable: store.durableCommit, now: now, retryFailed: false, limit: limit,
                    renumbered: renumbered ?? [:])
                if let last = b.rows.last?.id {
                    lastID = last
                    store.state.withLock { $0.unlinksBesideStarted }?(b.targets.map(\.path))
                    // After those under way: at most one set of unlink threads at a time.
                    let t = Taken(
                        batch: b, unlinks: BackgroundUnlinks.start(store, b.targets, after: open.last?.unlinks))
                    open.append(t)
                    fresh = t
                }
            }
        } else {
            lastID = try Int64.fetchOne(db, sql: "SELECT COALESCE(MAX(id), 0) FROM unlink_queue") ?? 0
            firstDue = start + store.configuration.unlinkDelay
        }
        // On a failure from here on, `open` keeps every set for `salvage` or `abandon`.
        try body()
        let keep = fresh != nil && !drain()
        let sets = keep ? Array(open.dropLast()) : open
        openAfterCommit = keep ? [open[open.count - 1]] : []
        if !sets.isEmpty {
            var r = report ?? SweepReport()
            let before = r.unlinked.count
            try record(sets, db, &r)
            try store.state.withLock { $0.sweptAlongside }?(Array(r.unlinked[before...]))
            uncommitted = r
        }
        return !open.isEmpty
    }

    private func record(_ sets: [Taken], _ db: Database, _ r: inout SweepReport) throws {
        let now = store.configuration.clock()
        for s in sets { _ = try store.recordSweepBatch(s.batch, s.unlinks.wait(), db, now: now, report: &r) }
    }

    /// The batch committed: what it recorded stands. Returns what the run's recorded unlinks
    /// came to so far, nil if none.
    func committed() -> SweepReport? {
        if let u = uncommitted { report = u }
        uncommitted = nil
        open = openAfterCommit
        openAfterCommit = []
        return report
    }

    /// After a batch failed (its transaction rolled back, or its commit's sync failed), on
    /// the writer still held: waits for every unlink under way and records all that no
    /// committed transaction did, in a transaction of their own, so the run reports them.
    /// That commit's report, nil if there was nothing to record or it could not be (a failed
    /// sync stops every write): then their rows stay queued, and the next sweep finds the
    /// files gone and finishes them.
    func salvage(_ w: HeldWriter) -> CommitReport? {
        let sets = open
        abandon()
        guard !sets.isEmpty else { return nil }
        var r = report ?? SweepReport()
        guard let c = try? w.write({ tx in try record(sets, tx.db, &r) }) else { return nil }
        report = r
        return c.report
    }

    /// Waits for every unlink under way, recording none.
    func abandon() {
        for s in open { _ = s.unlinks.wait() }
        open = []
        openAfterCommit = []
        uncommitted = nil
    }
}

/// Queue rows taken in one transaction, and their unlinks.
private struct Taken {
    var batch: SweepBatch
    var unlinks: BackgroundUnlinks
}

/// `unlinkAll` on a thread of its own, joined by `wait`.
private final class BackgroundUnlinks: Sendable {
    private let outcomes = Mutex<[UnlinkOutcome?]>([])
    private let done = DispatchGroup()

    /// Starts once `previous` (if any) has finished.
    static func start(
        _ store: Store, _ targets: [UnlinkTarget], after previous: BackgroundUnlinks?
    )
        -> BackgroundUnlinks
    {
        let u = BackgroundUnlinks()
        if targets.isEmpty { return u }
        u.done.enter()
        Thread {
            previous?.done.wait()
            let result = store.unlinkAll(
                targets, threads: store.configuration.unlinkThreadsBeside,
                beforeUnlink: store.state.withLock { $0.unlinkingBeside })
            u.outcomes.withLock { $0 = result }
            u.done.leave()
        }.start()
        return u
    }

    /// Waits for the unlinks; one outcome per target, in order.
    func wait() -> [UnlinkOutcome?] {
        done.wait()
        return outcomes.withLock { $0 }
    }
}
