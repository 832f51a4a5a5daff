// The pending-unlink queue: what a deleting commit adds (a file's registered identity, due
// `files.unlink_delay` later), what `pending` lists, and the rescheduling when leases end.
// The sweep that works through it is Store+Sweep.swift; its counters UnlinkCounters.swift.

import GRDB
import Synchronization

/// A queued unlink, as `pending` lists it.
public struct PendingUnlink: Sendable, Hashable {
    /// The file.
    public var path: String
    /// When its deleting transaction committed.
    public var queuedAt: Double
    /// Failed attempts so far.
    public var attempts: Int
    /// The last failure, e.g. "unlinkat: EACCES (Permission denied)".
    public var lastError: String?
    /// When it is tried next.
    public var nextAttempt: Double
    /// `.leased` while a live lease covers the file (it waits for the lease's end). An
    /// open-file deferral is a momentary finding and is not kept: such a row shows only its
    /// later `nextAttempt` (and the `deferred_open` counter counts it).
    public var deferred: UnlinkDeferReason?

    /// Memberwise.
    public init(
        path: String, queuedAt: Double, attempts: Int, lastError: String?, nextAttempt: Double,
        deferred: UnlinkDeferReason? = nil
    ) {
        self.path = path
        self.queuedAt = queuedAt
        self.attempts = attempts
        self.lastError = lastError
        self.nextAttempt = nextAttempt
        self.deferred = deferred
    }

    /// `{path, queued_at, attempts, last_error, next_attempt, deferred}`.
    public var json: JSONValue {
        .object([
            "path": .string(path), "queued_at": .double(queuedAt), "attempts": .int(Int64(attempts)),
            "last_error": lastError.map(JSONValue.string) ?? .null, "next_attempt": .double(nextAttempt),
            "deferred": deferred.map { .string($0.rawValue) } ?? .null,
        ])
    }
}

/// Why a queued file was kept in the queue for later, without counting a failed attempt.
public enum UnlinkDeferReason: String, Sendable, Hashable {
    /// Some process has it open (`files.skip_open`), or whether one has could not be told.
    case open
    /// A live lease covers it; it is retried when the lease ends.
    case leased
}

/// A registry row being queued for unlinking: its identity is copied to the queue row.
struct RegisteredFile {
    var path: String
    var size: Int64
    var device: Int64?
    var inode: Int64?
    var stamp: FileStamp
    /// Its claim, for a file a non-admin named (FileClaim.swift).
    var claim: RowClaim = .none
    /// Set when the look that names its file (`identify`) ended on a transient error: the
    /// look owed and why, kept in the queue row for the sweep.
    var owed: (look: OwedLook, why: String)?

    /// The columns `init(_:)` reads, in order.
    static let columns = "path, size, device, inode, birth, generation, ctime, claim"

    /// Memberwise.
    init(path: String, size: Int64, device: Int64?, inode: Int64?, stamp: FileStamp) {
        self.path = path
        self.size = size
        self.device = device
        self.inode = inode
        self.stamp = stamp
    }

    /// Reads the columns of `columns`, the first at index `c`.
    init(_ r: RawRow, from c: Int32 = 0) {
        func optional(_ i: Int32) -> Int64? { r.isNull(c + i) ? nil : r.int64(c + i) }
        path = r.text(c) ?? ""
        size = r.int64(c + 1)
        device = optional(2)
        inode = optional(3)
        stamp = FileStamp(birth: optional(4), generation: optional(5), ctime: optional(6))
        if !r.isNull(c + 7) { claim = RowClaim(text: r.text(c + 7)) }
    }

    /// `queueUnlink` for registry rows whose identity is known (`device` not NULL), straight
    /// from the `file` table, in the order of the JSON array of file ids `?4`: commit `?1`,
    /// queued at `?2`, due at `?3`. A policy batch queues its files with one statement.
    static let queueIdentified = """
        INSERT INTO unlink_queue (path, device, inode, size, birth, generation, ctime, commit_no, queued_at, next_attempt)
        SELECT f.path, f.device, f.inode, f.size, f.birth, f.generation, f.ctime, ?1, ?2, ?3
        FROM json_each(?4) j JOIN file f ON f.id = j.value WHERE f.device IS NOT NULL ORDER BY j.key
        """

    /// Queues this file's unlink in `db`'s transaction, for the deleting commit `commit`, due
    /// `delay` seconds after `now` (`queueIdentified` does the same for many).
    func queueUnlink(_ db: Database, commit: Int64, now: Double, delay: Double) throws {
        try queueUnlink(db.cachedStatement(sql: Self.queueOne), commit: commit, now: now, delay: delay)
    }

    /// `queueUnlink`'s statement: the worklist finds it once a transaction, as the statement
    /// cache hashes the SQL text at every lookup.
    static let queueOne = """
        INSERT INTO unlink_queue (
            path, device, inode, size, birth, generation, ctime, commit_no, queued_at, next_attempt, identify, last_error)
        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
        """

    /// `queueUnlink` through `statement`, a prepared `queueOne`.
    func queueUnlink(_ statement: Statement, commit: Int64, now: Double, delay: Double) throws {
        try statement.executeRaw { s in
            // Bound through the C API (a GRDB argument array of ten cost more than the insert);
            // a nil is left unbound, which is NULL.
            func bind(_ i: Int32, _ v: Int64?) { if let v { Statement.bindInt64(s, i, v) } }
            Statement.bindText(s, 1, path)
            bind(2, device)
            bind(3, inode)
            Statement.bindInt64(s, 4, size)
            bind(5, stamp.birth)
            bind(6, stamp.generation)
            bind(7, stamp.ctime)
            Statement.bindInt64(s, 8, commit)
            Statement.bindDouble(s, 9, now)
            Statement.bindDouble(s, 10, now + delay)
            if let owed {
                Statement.bindText(s, 11, owed.look.text)
                Statement.bindText(s, 12, owed.why)
            }
        }
    }
}

extension Store {
    /// Makes the queued unlinks of the files these ended leases covered due now (never before
    /// `files.unlink_delay` has passed since their commit), so the next
    /// sweep takes them (the daemon calls it when leases are released, lapse or their
    /// connection closes). Paths compare as UTF-8 bytes; a file still under another live
    /// lease is left alone, as are rows already due. Returns how many rows were rescheduled.
    public func leasesEnded(_ leases: [Lease]) throws -> Int {
        try leaseFilesEnded(leases.flatMap(\.files))
    }

    /// `leasesEnded` for the files kept of ended leases; past their cap, every row a lease
    /// deferred is made due again (the unlink checks the live leases again), a failed one at
    /// the longest retry delay as at open, where the paths' route makes it due at once.
    public func leasesEnded(_ ended: EndedLeaseFiles) throws -> Int {
        guard ended.overflowed else { return try leaseFilesEnded(ended.files) }
        try checkWritable()
        return try endLeaseDeferrals()
    }

    private func leaseFilesEnded(_ files: [String]) throws -> Int {
        try checkWritable()
        // Only these files looked up, not a snapshot of every lease: any client can end a lease.
        let stillLeased = self.leases.leasedUntil(eachOf: files)
        var seen = Set<[UInt8]>()
        var paths = [JSONValue]()
        for (file, until) in zip(files, stillLeased) where until == nil {
            if seen.insert(Array(file.utf8)).inserted { paths.append(.string(file)) }
        }
        guard !paths.isEmpty else { return 0 }
        let now = configuration.clock()
        return try Store.mapErrors {
            try pool.write { db in
                // TEXT compares with BINARY collation: byte for byte. Never before unlink_delay,
                // nor later than it from now (queued before a step back of the wall clock).
                try db.execute(
                    sql: """
                        UPDATE unlink_queue SET next_attempt = MIN(MAX(?1, queued_at + ?2), ?1 + ?2),
                            queued_at = MIN(queued_at, ?1)
                        WHERE next_attempt > MIN(MAX(?1, queued_at + ?2), ?1 + ?2)
                        AND path IN (SELECT value FROM json_each(?3))
                        """, arguments: [now, configuration.unlinkDelay, JSONValue.array(paths).serialized()])
                // `now` was read before the writer was free: the rows may land before a
                // min_free count made meanwhile.
                if db.changesCount > 0 { queueRowsMoved.add(1, ordering: .relaxed) }
                return db.changesCount
            }
        }
    }

    /// At open no lease is live (they die with the process that held them), so rows a lease
    /// deferred are due again, no later than `files.unlink_delay` allows. Rows deferred for
    /// an open file are only probed sooner; failed rows keep their backoff, but no more: a
    /// failed row a lease then deferred (to the lease's end, up to a day) is due within the
    /// longest retry delay, as any failed row. Parked rows are due at once: the roots, or
    /// the filesystems mounted, may have changed since. No row waits longer from now than
    /// `files.unlink_delay` or the longest retry delay: the wall clock may have stepped back
    /// since they were queued (Store+ClockSteps.swift).
    /// Returns how many rows were made due sooner.
    @discardableResult
    func endLeaseDeferrals() throws -> Int {
        let now = configuration.clock()
        return try Store.mapErrors {
            try pool.write { db in
                try db.execute(
                    sql: "UPDATE unlink_queue SET next_attempt = ? WHERE next_attempt >= ?",
                    arguments: [now, Store.parkedUntil])
                let unparked = db.changesCount
                try db.execute(
                    sql: """
                        UPDATE unlink_queue SET next_attempt = MIN(MAX(?1, queued_at + ?2), ?1 + ?2),
                            queued_at = MIN(queued_at, ?1)
                        WHERE attempts = 0 AND next_attempt > MIN(MAX(?1, queued_at + ?2), ?1 + ?2)
                        """, arguments: [now, configuration.unlinkDelay])
                let unfailed = db.changesCount
                try db.execute(
                    sql: "UPDATE unlink_queue SET next_attempt = ?1 WHERE attempts > 0 AND next_attempt > ?1",
                    arguments: [now + Store.maximumRetryDelay])
                let moved = unparked + unfailed + db.changesCount
                if moved > 0 { queueRowsMoved.add(1, ordering: .relaxed) }
                return moved
            }
        }
    }

    /// Queued unlinks, oldest first, parked ones last (they would hide newer failures); a row
    /// whose file a live lease covers shows `.leased`.
    public func pending(limit: Int = 100) throws -> [PendingUnlink] {
        let rows = try read { r in
            let columns = "SELECT path, queued_at, attempts, last_error, next_attempt FROM unlink_queue"
            var rows = try Row.fetchAll(
                r.db, sql: columns + " WHERE next_attempt < ? ORDER BY id LIMIT ?",
                arguments: [Store.parkedUntil, limit])
            if rows.count < limit {
                rows += try Row.fetchAll(
                    r.db, sql: columns + " WHERE next_attempt >= ? ORDER BY id LIMIT ?",
                    arguments: [Store.parkedUntil, limit - rows.count])
            }
            return rows
        }
        // Only the page's paths looked up, not a snapshot of every lease: any client can ask.
        let paths: [String] = rows.map { $0[0] }
        let leased = leases.leasedUntil(eachOf: paths)
        // A leased row waits for its lease at least: its end as the wall clock reads now (the
        // row's own next attempt may predate a step of it). A row queued before a step forward
        // is due once the step-free clock passes its next attempt too: that far later on the
        // wall clock (ClockSteps.swift).
        let clock = clocks.read()
        return zip(zip(rows, paths), leased).map { rowPath, until in
            let (row, path) = rowPath
            let queued: Double = row[1]
            let stored: Double = row[4]
            let next = clock.steppedForward && queued < clock.boundary ? stored + clock.forward : stored
            return PendingUnlink(
                path: path, queuedAt: row[1], attempts: row[2], lastError: row[3],
                nextAttempt: until.map { max(next, $0) } ?? next, deferred: until != nil ? .leased : nil)
        }
    }
}
