// One batch of the unlink queue, in a write transaction: taken (due rows whose commit is
// durable, minus those referenced again or leased), unlinked by the caller (`unlinkAll`, on
// this thread or beside other work), then recorded in queue order. The sweep
// (Store+Sweep.swift) and a policy run's unlinks beside its batches (SweepAlongside.swift)
// both go through here.

import GRDB
import JSON
import Synchronization

/// A queued file a sweep batch unlinks.
struct UnlinkTarget: Sendable {
    var path: String
    /// Its managed root; nil if it is no longer under one (kept and retried: the root may come back).
    var root: String?
    var device: Int64?
    var inode: Int64?
    /// What tells the file from a later one with its inode number, and its size then.
    var stamp: FileStamp
    var size: Int64?
    /// The number `device`'s filesystem has now, if a root's was renumbered (either tells the file).
    var deviceNow: Int64?
    /// Set when its outcome is known without an unlink: its look, owed, could not be taken.
    var decided: UnlinkOutcome? = nil
}

/// One row of the unlink queue.
struct QueuedUnlink {
    var id: Int64
    var path: String
    var device: Int64?
    var inode: Int64?
    var attempts: Int
    var stamp: FileStamp
    var size: Int64?
    /// Its file's look, owed since it ended on a transient error (`OwedLook.text`); nil
    /// once taken.
    var owed: String?
}

/// Queue rows taken in a write transaction, and what to do with each.
struct SweepBatch {
    /// In queue order; without the rows left owing their look (`recordOwedLook`).
    var rows: [QueuedUnlink]
    /// Paths an edge references again: kept, their rows dropped.
    var referenced: Set<[UInt8]>
    /// Leased paths, each with the latest expiry of its leases.
    var leasedUntil: [[UInt8]: Double]
    /// The rows whose files are unlinked, in queue order, and those files (rows in `skipping`
    /// have no target: their outcome is known).
    var targetIDs: [Int64]
    var targets: [UnlinkTarget]
    /// By row id, why an owed look was not taken: its skip says so.
    var lookNotTaken: [Int64: String] = [:]
    /// How many rows were read, left ones included, and the last one's id (nil for none).
    var read = 0
    var lastID: Int64?

    /// Whether some row may be kept. Usually neither set holds a path (none registered again,
    /// no lease held): then no row's path is copied to be looked up in them.
    var keepsSome: Bool { !referenced.isEmpty || !leasedUntil.isEmpty }
}

extension Store {
    /// A sweep batch's window of the queue, for `sweepWindowArguments`: the rows after an id
    /// whose commit is durable and that are due (or failed before, when retried), in id order,
    /// at most a limit. The batch and its owed looks (OwedLooks.swift) read the same rows.
    /// Due by both clocks: a row queued before a step forward of the wall clock waits the
    /// step out too (ClockSteps.swift). Without such a step, the statement as it always was:
    /// the longer one costs SQLite's parser and planner a third more.
    static func sweepWindow(_ now: ClockSteps.Reading) -> String {
        now.steppedForward
            ? """
            WHERE id > ? AND commit_no <= ?
            AND (next_attempt <= ? AND (queued_at >= ? OR next_attempt <= ?) OR (? AND attempts > 0 AND next_attempt < ?))
            ORDER BY id LIMIT ?
            """
            : """
            WHERE id > ? AND commit_no <= ? AND (next_attempt <= ? OR (? AND attempts > 0 AND next_attempt < ?))
            ORDER BY id LIMIT ?
            """
    }

    static func sweepWindowArguments(
        _ lastID: Int64, _ durable: Int64, _ now: ClockSteps.Reading, _ retryFailed: Bool, _ limit: Int
    ) -> StatementArguments {
        now.steppedForward
            ? [lastID, durable, now.wall, now.boundary, now.wall - now.forward, retryFailed, Store.parkedUntil, limit]
            : [lastID, durable, now.wall, retryFailed, Store.parkedUntil, limit]
    }

    /// Takes up to `limit` rows after `lastID` whose commit is at most `durable` and that are
    /// due at `now` (or failed before, with `retryFailed`).
    func takeSweepBatch(
        _ db: Database, after lastID: Int64, durable: Int64, now: ClockSteps.Reading, retryFailed: Bool, limit: Int,
        renumbered: RenumberedDevices, skipping known: [Int64: UnlinkOutcome] = [:], looks: [Int64: TakenLook] = [:]
    ) throws -> SweepBatch {
        // Raw rows: GRDB's `Row` decoding of the optional columns looked up generic metadata
        // for each, most of the cost of a row, on the writer's serial path.
        var rows = [QueuedUnlink]()
        try db.cachedStatement(
            sql: """
                SELECT id, path, device, inode, attempts, birth, generation, ctime, size, identify FROM unlink_queue
                \(Store.sweepWindow(now))
                """
        ).forEachRawRow(Store.sweepWindowArguments(lastID, durable, now, retryFailed, limit)) { r in
            func optional(_ i: Int32) -> Int64? { r.isNull(i) ? nil : r.int64(i) }
            // The column is NOT NULL: a NULL here is a broken database or query, not a row to skip.
            guard let path = r.text(1) else { preconditionFailure("unlink_queue row \(r.int64(0)) without a path") }
            rows.append(
                QueuedUnlink(
                    id: r.int64(0), path: path, device: optional(2), inode: optional(3),
                    attempts: Int(r.int64(4)),
                    stamp: FileStamp(birth: optional(5), generation: optional(6), ctime: optional(7)),
                    size: optional(8), owed: r.isNull(9) ? nil : r.text(9)))
        }
        let paths = JSONValue.array(rows.map { .string($0.path) }).serialized()
        // Taken again by a later transaction (transactions cancel such rows; this is the check
        // made again just before unlinking, as assetd(8), The unlink queue, says): keep the
        // file, drop the row.
        let referenced = Set(
            try String.fetchAll(
                db.cachedStatement(
                    sql: """
                        SELECT f.path FROM file f WHERE f.path IN (SELECT value FROM json_each(?))
                        AND EXISTS (SELECT 1 FROM edge e WHERE e.is_file = 1 AND e.dst = f.id)
                        """), arguments: [paths]
            ).map { Array($0.utf8) })
        // Once per batch: each leased file of the batch with the latest expiry of its leases.
        var leasedUntil = [[UInt8]: Double]()
        for (row, until) in zip(rows, leases.leasedUntil(files: rows.map(\.path))) {
            if let until { leasedUntil[Array(row.path.utf8)] = until }
        }
        // The files to unlink, in queue order: contiguous slices keep a folder's files on one
        // thread (each thread keeps its folder open).
        var b = SweepBatch(rows: [], referenced: referenced, leasedUntil: leasedUntil, targetIDs: [], targets: [])
        (b.read, b.lastID) = (rows.count, rows.last?.id)
        let kept = b.keepsSome
        let waiting = foldersAwaitingLooks(rows, looks, skipping: known)
        b.rows.reserveCapacity(rows.count)
        b.targetIDs.reserveCapacity(rows.count)
        b.targets.reserveCapacity(rows.count)
        for var row in rows {
            if kept {
                let bytes = Array(row.path.utf8)
                if referenced.contains(bytes) || leasedUntil[bytes] != nil {
                    b.rows.append(row)
                    continue
                }
            }
            if known[row.id] != nil {
                b.rows.append(row)
                b.targetIDs.append(row.id)
                continue
            }
            var decided: UnlinkOutcome?
            if row.owed != nil {
                // Its look, taken before this transaction (OwedLooks.swift), or none: left owed.
                guard let look = try recordOwedLook(&row, looks, db) else { continue }
                (decided, b.lookNotTaken[row.id]) = look
            }
            // Its folder is on the way to a file whose look is left: an unlink would change
            // the folder, which that look, taken later, refuses.
            if !waiting.isEmpty, decided == nil, row.inode != nil, waiting.contains(Store.folder(of: row.path)) {
                continue
            }
            b.rows.append(row)
            b.targetIDs.append(row.id)
            // Recorded before its filesystem was numbered anew: the device it has now too.
            b.targets.append(
                UnlinkTarget(
                    path: row.path, root: roots.root(of: row.path), device: row.device, inode: row.inode,
                    stamp: row.stamp, size: row.size,
                    // Skipped when nothing was renumbered: the root lookup is a prefix scan per row.
                    deviceNow: renumbered.isEmpty
                        ? nil : row.device.flatMap { renumbered.now($0, root: roots.nearestRoot(of: row.path)) },
                    decided: decided))
        }
        return b
    }

    /// Records the batch's outcomes (one per `targetIDs` entry, nil where a lease came first)
    /// here, on the writer, in queue order, as one file at a time would; returns the last row's
    /// id read (a row left owing its look included), nil when none was.
    func recordSweepBatch(
        _ b: SweepBatch, _ outcomes: [UnlinkOutcome?], _ db: Database, now: Double, report: inout SweepReport
    ) throws -> Int64? {
        var counts = [String: Int]()
        var finished = [JSONValue]()
        var next = 0
        let kept = b.keepsSome
        finished.reserveCapacity(b.rows.count)
        for row in b.rows {
            let (id, path) = (row.id, row.path)
            if kept {
                let bytes = Array(path.utf8)
                if b.referenced.contains(bytes) {
                    finished.append(.int(id))
                    report.referencedAgain.append(path)
                    continue
                }
                // Never unlinked while a lease lives, even when an explicit delete queued it.
                if let until = b.leasedUntil[bytes] {
                    try deferUnlink(
                        db, id: id, path: path, reason: .leased, until: until, counts: &counts, report: &report)
                    continue
                }
            }
            let outcome = outcomes[next]
            next += 1
            guard let outcome else {
                // Leased while this batch ran: the unlink did not happen.
                let until = leases.leasedUntil(file: path) ?? now
                // `now` was read before the batch: due again before a min_free count made meanwhile.
                if until <= now { queueRowsMoved.add(1, ordering: .relaxed) }
                try deferUnlink(db, id: id, path: path, reason: .leased, until: until, counts: &counts, report: &report)
                continue
            }
            if try record(outcome, db, row, now: now, counts: &counts, report: &report) {
                finished.append(.int(id))
            }
            if outcome == .identityChanged, let why = b.lookNotTaken[id] {
                report.lookNotTaken.append((path, "its look, owed since a transient error, was not taken: " + why))
            }
        }
        try db.cachedStatement(sql: "DELETE FROM unlink_queue WHERE id IN (SELECT value FROM json_each(?))")
            .execute(arguments: [JSONValue.array(finished).serialized()])
        for (name, n) in counts { try Store.bump(db, name, by: Int64(n)) }
        return b.lastID
    }

    /// Records one file's outcome; true when its row is finished (done or skipped), false
    /// when it failed or was deferred and stays queued for a retry.
    private func record(
        _ outcome: UnlinkOutcome, _ db: Database, _ row: QueuedUnlink, now: Double, counts: inout [String: Int],
        report: inout SweepReport
    ) throws -> Bool {
        let (id, path, attempts) = (row.id, row.path, row.attempts)
        switch outcome {
        case .removed, .alreadyGone:
            counts["unlinked", default: 0] += 1
            report.unlinked.append(path)
            return true
        case .identityChanged, .unsafePath:
            let reason: UnlinkSkipReason = outcome == .identityChanged ? .identityChanged : .unsafePath
            counts["skipped_" + reason.rawValue, default: 0] += 1
            report.skipped.append((path, reason))
            return true
        case .failed, .notUnderRoot, .otherFilesystem:
            var message = "not under a configured root"
            // Retrying these until something changes would log and count a failure each hour
            // for ever: parked (failed once more, logged once) until the next open. Roots change
            // only with a restart; a filesystem gone for good gets a day first.
            var park = true
            if case .failed(let e, let call) = outcome {
                (message, park) = ("\(call): \(errnoDescription(e))", false)
            } else if case .otherFilesystem(let why) = outcome {
                (message, park) = (why, attempts + 1 >= Store.parkAfterAttempts)
            }
            if park { message += " (parked until assetd starts again)" }
            let delay = min(Store.maximumRetryDelay, Double(1 << min(attempts, 12)))
            try db.cachedStatement(
                sql: """
                    UPDATE unlink_queue SET attempts = attempts + 1, last_error = ?, next_attempt = ? WHERE id = ?
                    """
            ).execute(arguments: [message, park ? Store.parkedUntil : now + delay, id])
            counts["unlink_failures", default: 0] += 1
            report.failed.append((path, message, attempts + 1))
            return false
        case .open, .undetermined:
            try deferUnlink(
                db, id: id, path: path, reason: .open, until: now + Store.openFileRetryDelay, counts: &counts,
                report: &report)
            if case .undetermined(let why) = outcome {
                // Kept because it could not be told: counted apart, so an operator sees why.
                counts["deferred_open_undetermined", default: 0] += 1
                report.undetermined.append((path, why))
            }
            return false
        }
    }

    /// Keeps a row for a retry at `until`; attempts and last error stay as they were.
    private func deferUnlink(
        _ db: Database, id: Int64, path: String, reason: UnlinkDeferReason, until: Double,
        counts: inout [String: Int], report: inout SweepReport
    ) throws {
        try db.cachedStatement(sql: "UPDATE unlink_queue SET next_attempt = ? WHERE id = ?")
            .execute(arguments: [until, id])
        counts["deferred_" + reason.rawValue, default: 0] += 1
        report.deferred.append((path, reason))
    }
}
