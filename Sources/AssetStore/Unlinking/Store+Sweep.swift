// The unlinker (assetd(8), DATA MODEL, The unlink queue): takes the looks queued rows owe
// before each batch's transaction (OwedLooks.swift), then due rows of the pending-unlink
// queue whose commit is durable, re-checks in the write transaction that no edge references the
// path, removes the batch's files safely on several threads while that transaction is held, then
// records each outcome in queue order: done, skipped (kept, reported), failed (retried with backoff
// from 1 s doubling to 1 h) or deferred (a lease or, with `files.skip_open`, an open file keeps it
// for now; retried later without counting an attempt).

import GRDB
import JSON

/// Why a queued file was kept.
public enum UnlinkSkipReason: String, Sendable, Hashable {
    /// Another file (inode, or the same inode number given to a new file) or a non-regular
    /// file is at the path now.
    case identityChanged = "identity_changed"
    /// A symlink or a mount point on the way.
    case unsafePath = "unsafe_path"
}

/// What one sweep did.
public struct SweepReport: Sendable {
    /// Files removed (or already gone).
    public var unlinked: [String] = []
    /// Files whose unlink failed this time, with the error; they stay queued.
    public var failed: [(path: String, error: String, attempts: Int)] = []
    /// Files kept and dropped from the queue, with why.
    public var skipped: [(path: String, reason: UnlinkSkipReason)] = []
    /// Among the `identity_changed` skips, those whose look, owed since the delete (a
    /// transient error), could not be taken later, with why: a leak an admin may clean up.
    public var lookNotTaken: [(path: String, why: String)] = []
    /// Files dropped from the queue because an edge references them again.
    public var referencedAgain: [String] = []
    /// Files kept in the queue for later, with why; their attempts are not counted.
    public var deferred: [(path: String, reason: UnlinkDeferReason)] = []
    /// Among the `open` deferrals, those where it could not be told whether the file is
    /// open (no lease possible and /proc not fully readable), with why.
    public var undetermined: [(path: String, why: String)] = []
    /// Rows still queued after the sweep.
    public var pending: Int = 0
    /// Among them, those a restore holds until `sweep --release-restore` (Store+Restore.swift).
    public var held: Int = 0
}

extension Store {
    /// The longest wait between attempts.
    public static let maximumRetryDelay = 3600.0
    /// The next attempt of a parked row: never, until an open makes it due (endLeaseDeferrals).
    /// Parked: a row under no configured root (roots change only with a restart), and one
    /// whose filesystem has not been where it was for `parkAfterAttempts` attempts.
    public static let parkedUntil = 9.0e15
    /// Attempts after which a file on another filesystem than recorded is parked: with the
    /// backoff, about a day of hourly retries.
    public static let parkAfterAttempts = 36
    /// Seconds before a file found open (`files.skip_open`) is probed again: short, because a
    /// reader usually finishes soon, and long enough that a file held open for hours costs
    /// one open and fcntl per ten seconds.
    public static let openFileRetryDelay = 10.0

    /// Threads a sweep batch unlinks on at most: an unlink mostly waits on the disk (with
    /// `discard`, on the device), so many run at once even on few cores (on ext4 with
    /// `discard`, 76 µs per unlink from one thread, about 20 µs with 16).
    public static let sweepThreads = 16
    /// Files per thread at least: a small batch (the daemon's sweep every second usually
    /// finds one file) runs on the calling thread, starting no thread at all.
    static let filesPerSweepThread = 16

    /// Unlinks every due queued file whose commit is durable. With `retryFailed`, failed rows
    /// are tried now instead of at their next attempt time. A file under a live lease, and
    /// with `files.skip_open` a file some process has open, is deferred: it stays queued
    /// without counting an attempt, due again when the lease lapses or ten seconds later.
    /// The unlinks a restored copy queued are held (Store+Restore.swift) unless
    /// `releasingRestoreHold` (an admin's `sweep --release-restore`), which ends that hold for good.
    public func sweep(
        retryFailed: Bool = false, releasingRestoreHold: Bool = false, batch: Int = 1000
    ) throws -> SweepReport {
        try sweep(
            retryFailed: retryFailed, batch: batch, threads: Store.sweepThreads,
            releasingRestoreHold: releasingRestoreHold)
    }

    /// `sweep`, with at most `threads` unlink threads per batch; `beforeUnlink` (tests) is
    /// called on the unlinking thread with each path just before its lease check and unlink.
    func sweep(
        retryFailed: Bool, batch: Int, threads: Int, releasingRestoreHold: Bool = false,
        beforeUnlink: (@Sendable (String) -> Void)? = nil
    ) throws -> SweepReport {
        try checkWritable()
        try checkNotCopy("sweep")
        if releasingRestoreHold { try releaseQueueHold() }
        // Rows up to this id are a restored copy's, held (Store+Restore.swift).
        let held = heldQueueThrough
        var report = SweepReport()
        if held > 0 {
            report.held = try read { r in
                try Int.fetchOne(r.db, sql: "SELECT COUNT(*) FROM unlink_queue WHERE id <= ?", arguments: [held]) ?? 0
            }
        }
        let clock = clocks.read()
        // A bound that cannot be written now (a full disk: it frees nothing, so it may not take
        // the reserve) leaves rows later than they need be, never sooner: the sweep, which
        // frees space, goes on, and the next one tries the bound again.
        try? boundQueue(after: clock)
        // The daemon sweeps every second: with nothing due, a read is all it costs (no write
        // lock taken from clients, no WAL sync). Due by both clocks (sweepWindow).
        let (pending, due) = try read { r in
            let row = try Row.fetchOne(
                r.db,
                sql: clock.steppedForward
                    ? """
                    SELECT COUNT(*), EXISTS (
                        SELECT 1 FROM unlink_queue
                        WHERE id > ?6 AND (next_attempt <= ?1 AND (queued_at >= ?4 OR next_attempt <= ?5)
                        OR (?2 AND attempts > 0 AND next_attempt < ?3)))
                    FROM unlink_queue
                    """
                    : """
                    SELECT COUNT(*), EXISTS (
                        SELECT 1 FROM unlink_queue
                        WHERE id > ?4 AND (next_attempt <= ?1 OR (?2 AND attempts > 0 AND next_attempt < ?3)))
                    FROM unlink_queue
                    """,
                arguments: clock.steppedForward
                    ? [clock.wall, retryFailed, Store.parkedUntil, clock.boundary, clock.wall - clock.forward, held]
                    : [clock.wall, retryFailed, Store.parkedUntil, held])
            return (row?[0] ?? 0, row?[1] ?? false) as (Int, Bool)
        }
        guard due else {
            report.pending = pending
            return report
        }
        try makeDurable()
        let durable = durableCommit
        var lastID: Int64 = held
        var renumbered: RenumberedDevices?
        // What the unlinks of a batch whose commit failed came to, by queue row: a second
        // attempt records these instead of unlinking again (only the commit failed; the
        // unlinks happened).
        var attempted = [Int64: UnlinkOutcome]()
        while true {
            let clock = clocks.read()
            let now = clock.wall
            // On a full disk the reserve lets the batch commit (its unlinks free space); a second
            // attempt starts from the same report, and the same root devices to record (they
            // were rolled back too), with the outcomes of the first.
            let before = (report, lastID, renumbered)
            // Before the transaction: a look's file system calls never hold the writer.
            let looks = try takeOwedLooks(
                after: lastID, durable: durable, now: clock, retryFailed: retryFailed, limit: batch)
            let done: Bool = try freeingSpace("the sweep of queued unlinks") {
                try Store.mapErrors {
                    (report, lastID, renumbered) = before
                    return try pool.write { db in
                        if renumbered == nil { renumbered = try noteRootDevices(db, now: now) }
                        let b = try takeSweepBatch(
                            db, after: lastID, durable: durable, now: clock, retryFailed: retryFailed, limit: batch,
                            renumbered: renumbered ?? RenumberedDevices(), skipping: attempted, looks: looks)
                        var fresh = unlinkAll(b.targets, threads: threads, beforeUnlink: beforeUnlink).makeIterator()
                        let outcomes = b.targetIDs.map { id in
                            let outcome = attempted[id] ?? fresh.next()!  // one fresh outcome per target
                            if let outcome { attempted[id] = outcome }
                            return outcome
                        }
                        lastID = try recordSweepBatch(b, outcomes, db, now: now, report: &report) ?? lastID
                        return b.read < batch
                    }
                }
            }
            if done { break }
        }
        // Its queue updates were committed without a sync (the writer runs synchronous = NORMAL):
        // synced once here, so a crash does not bring back rows of files already unlinked.
        if configuration.durability == .full { try syncWAL() }
        report.pending = try pool.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM unlink_queue") ?? 0 }
        return report
    }

    /// Unlinks `targets` on up to `threads` threads, contiguous slices each; one outcome per
    /// target in order, nil where a lease covered the file when its turn came. Each file is
    /// checked against the leases and unlinked under the registry's gate held shared, so a
    /// lease answered meanwhile is answered either before (no unlink) or after the unlink.
    func unlinkAll(
        _ targets: [UnlinkTarget], threads: Int, beforeUnlink: (@Sendable (String) -> Void)?
    ) -> [UnlinkOutcome?] {
        let leases = self.leases
        let roots = self.roots
        // One probe for the batch: its /proc pass, when leases cannot decide, is read once.
        let probe = configuration.skipOpenFiles ? OpenFileProbe() : nil
        let threads = min(threads, max(1, targets.count / Store.filesPerSweepThread))
        // Looked at once a batch: never unlinked under any name (Store+Files.swift).
        let own = ownFileIDs()
        return inSlices(count: targets.count, threads: threads) { slice in
            // Each thread its own unlinker: it caches the folder it has open.
            let unlinker = SafeUnlinker(roots: roots, own: own)
            return targets[slice].map { t in
                if let decided = t.decided { return decided }
                beforeUnlink?(t.path)
                return leases.unlessLeased(file: t.path) {
                    guard let root = t.root else { return UnlinkOutcome.notUnderRoot }
                    return unlinker.unlink(
                        path: t.path, root: root, device: t.device, inode: t.inode, stamp: t.stamp, size: t.size,
                        deviceNow: t.deviceNow, probe: probe)
                }
            }
        }
    }
}
