// Access times kept in memory: a touch records `accessed` here and costs a point read;
// `flushAccesses` writes the pending ones in one transaction, in id order, many objects a
// statement, at most every `store.access_flush` (the daemon's timer), before every policy run
// and at close. A crash loses at most the pending ones (assetd(8)); `accessed` never moves
// backwards.

import GRDB
import Synchronization

/// The touches not yet written, and their counters for `stats`.
struct PendingAccesses {
    /// Object id to the latest access time recorded for it, and the touches recorded for it
    /// since the last flush took it (S3-FIFO and SIEVE count each access, not each flush that
    /// saw some). One dictionary: a touch hashes its id once.
    var pending: [Int64: (time: Double, count: Int)] = [:]
    /// Taken by the flush running now, until it has committed (reads still see them). The
    /// flush swaps the two tables: taking the pending ones copies nothing under the lock, and
    /// the next second's touches fill a table of the size the last flush's needed.
    var inFlight: [Int64: (time: Double, count: Int)] = [:]
    /// Touches recorded, flushes that wrote something, and access times they wrote.
    var touches: Int64 = 0
    var flushes: Int64 = 0
    var flushed: Int64 = 0
    /// The last flush found the disk full and left the touches pending (noted once).
    var waitingForRoom = false

    /// Records a touch at `now` in a pending entry; returns its time (never earlier than before).
    static func touch(_ entry: inout (time: Double, count: Int), at now: Double) -> Double {
        entry = (max(entry.time, now), entry.count + 1)
        return entry.time
    }
}

/// One object's pending accesses as a flush writes them.
struct AccessRecord {
    var id: Int64
    var time: Double
    var count: Int

    /// The records of `pending`, in id order (the rows each statement visits share pages).
    static func sorted(_ pending: [Int64: (time: Double, count: Int)]) -> [AccessRecord] {
        var records = pending.map { AccessRecord(id: $0.key, time: $0.value.time, count: $0.value.count) }
        records.sort { $0.id < $1.id }
        return records
    }
}

extension Store {
    /// Records an access of `ref` now, in memory: the object's files are not read again.
    /// Throws `not_found` if it does not exist. `check` sees the object's owner first (and may
    /// refuse the touch).
    public func touch(_ ref: ObjectRef, check: AccessCheck? = nil) throws {
        try checkWritable()
        try ref.validate()
        try queries.with { conn in try conn.inReadTransaction { try touch(ref, on: conn, check: check) } }
    }

    /// Records an access of `ref` as the connection's current read transaction finds it; the
    /// caller checked writability and the ref. Without a check only the (collection, key)
    /// index is read.
    func touch(_ ref: ObjectRef, on conn: QueryConnection, check: AccessCheck?) throws {
        let found: Int64?
        if let check {
            found = try Store.idAndOwner(ref, on: conn).map { id, owner in
                try check(owner)
                return id
            }
        } else {
            found = try Store.objectID(ref, on: conn)
        }
        guard let id = found else { throw StoreError(.notFound, "no object \(ref)", detail: ref.json) }
        recordAccess(id)
    }

    /// Records an access of object `id` now; returns its access time not yet committed, as
    /// `pendingAccess` would (one lock for a touching read, not two).
    @discardableResult
    func recordAccess(_ id: Int64) -> Double {
        let now = configuration.clock()
        return accesses.withLock { a in
            // One hash: the entry is found, or made, in place.
            let time = PendingAccesses.touch(&a.pending[id, default: (now, 0)], at: now)
            a.touches += 1
            guard !a.inFlight.isEmpty, let f = a.inFlight[id]?.time else { return time }
            return max(time, f)
        }
    }

    /// The access time of object `id` recorded and not yet committed, if any.
    func pendingAccess(_ id: Int64) -> Double? {
        accesses.withLock { a in
            // Without touches nothing is hashed: a plain get of a store nobody touches.
            let p = a.pending.isEmpty ? nil : a.pending[id]?.time
            guard !a.inFlight.isEmpty, let f = a.inFlight[id]?.time else { return p }
            return max(p ?? f, f)
        }
    }

    /// Access times recorded and not yet written.
    public var pendingAccessCount: Int { accesses.withLock { $0.pending.count } }

    /// Writes the pending access times now, for a process about to stop or with no later
    /// flush (the daemon at shutdown, `assetctl --db` after a method): nil when none are left,
    /// else why some were not written, for the caller to report them lost. On a full disk
    /// they wait for room (assetd(8), FULL DISK) and this says how many.
    public func writePendingAccesses() -> String? {
        guard !isReadOnly, pendingAccessCount > 0 else { return nil }
        do {
            try flushAccesses()
            let left = pendingAccessCount
            return left > 0 ? "\(left) waited for room on the disk" : nil
        } catch {
            return "\(error)"
        }
    }

    /// Writes the pending access times in one transaction, in id order (pages together);
    /// returns its commit, or nil with nothing pending or when they wait for room (below). One flush at a time; on failure they
    /// stay pending. On a full disk (assetd(8), FULL DISK) they wait for room and it returns
    /// nil: a flush of many objects can need more than the reserve, which is for deletes, so
    /// policy runs, queries and the timer go on by the times already written.
    @discardableResult
    public func flushAccesses() throws -> CommitReport? {
        try accessFlush.withLock { _ in
            if reserve.wasReleased {
                waitForRoom()
                return nil
            }
            // Sorted outside the lock: a touch on the loop waits for the swap alone.
            let taken = AccessRecord.sorted(
                accesses.withLock { a in
                    swap(&a.pending, &a.inFlight)
                    return a.inFlight
                })
            guard !taken.isEmpty else { return nil }
            let report: CommitReport
            do {
                report = try write { tx in try tx.writeAccesses(taken) }.report
            } catch {
                accesses.withLock { a in
                    for r in taken {
                        let now = a.pending[r.id] ?? (r.time, 0)
                        a.pending[r.id] = (max(now.time, r.time), now.count + r.count)
                    }
                    a.inFlight.removeAll(keepingCapacity: true)
                }
                if Store.isStorageFull(error) {
                    waitForRoom()
                    return nil
                }
                throw error
            }
            accesses.withLock { a in
                a.inFlight.removeAll(keepingCapacity: true)
                a.waitingForRoom = false
                a.flushes += 1
                a.flushed += Int64(taken.count)
            }
            return report
        }
    }

    /// Before an index query or aggregate: any clause may read `accessed` (the default index
    /// has it, and ORDER BY accessed is how a cache lists its LRU), so the pending times are
    /// written first. Free when none are pending; touches between queries share one flush.
    /// Touches a flush under way has taken count too: the query waits for its commit, or its
    /// snapshot could be taken before it and miss them.
    func flushAccessesBeforeQuery() throws {
        let (pending, inFlight) = accesses.withLock { (!$0.pending.isEmpty, !$0.inFlight.isEmpty) }
        if inFlight { state.withLock { $0.queryWaitsForFlush }?() }
        if pending || inFlight { try flushAccesses() }
    }

    /// Notes, once until a flush succeeds, that pending touches wait for room on the disk.
    private func waitForRoom() {
        let first = accesses.withLock { a in
            defer { a.waitingForRoom = true }
            return !a.waitingForRoom
        }
        guard first else { return }
        reserve.note(.warning, "access times wait in memory for room on the disk; eviction orders by those written")
    }

    /// `access` in `stats`: pending touches, flushes, times written, touches recorded.
    public var accessStatistics: [String: Int64] {
        accesses.withLock { a in
            [
                "pending": Int64(a.pending.count + a.inFlight.count), "flushes": a.flushes, "flushed": a.flushed,
                "touches": a.touches,
            ]
        }
    }
}

extension WriteTransaction {
    /// Sets `accessed` of each object still there to the later of its own and the given
    /// time, and counts the accesses for an order that counts them (S3-FIFO, SIEVE). The
    /// records are in id order, so the rows each statement visits share pages. No index
    /// refresh at commit: the built-in index reads `accessed` from the object row (its SQLite
    /// indexes follow the UPDATE), and user index columns come from the value alone.
    func writeAccesses(_ records: [AccessRecord]) throws {
        let counting = store.policy.map { $0.order != .lru } ?? false
        var start = 0
        while start < records.count {
            let rows = records[start..<min(records.count, start + AccessSQL.maxRows)]
            let shape = AccessSQL.shape(for: rows.count)
            try db.cachedStatement(sql: AccessSQL.update[shape]).executeRaw { s in
                var i: Int32 = 1
                for r in rows {
                    Statement.bindInt64(s, i, r.id)
                    Statement.bindDouble(s, i + 1, r.time)
                    i += 2
                }
            }
            if counting {
                try db.cachedStatement(sql: AccessSQL.count[shape]).executeRaw { s in
                    var i: Int32 = 1
                    for r in rows {
                        Statement.bindInt64(s, i, r.id)
                        Statement.bindInt64(s, i + 1, Int64(r.count))
                        i += 2
                    }
                }
            }
            start += rows.count
        }
    }
}

/// The access flush's statements: one per up to `maxRows` objects, each row of its VALUES an
/// object's id and time (or count). A statement per object cost as much again in statement
/// overhead as its row work. Rows come in powers of two so that a handful of statements are
/// cached; the rows left unbound are NULL ids, which match no object. OR IGNORE: no row can
/// fail a constraint (ids and values are bound, NULL rows join nothing), and a statement that
/// cannot abort halfway needs no statement journal (a copy of each page it writes that an
/// earlier statement of the flush already wrote).
enum AccessSQL {
    static let maxRows = 256
    static let shapes = (0...8).map { 1 << $0 }

    /// The index into `update` and `count` of the smallest statement taking `rows` rows.
    static func shape(for rows: Int) -> Int {
        shapes.firstIndex { $0 >= rows } ?? shapes.count - 1
    }

    private static func values(_ rows: Int) -> String {
        Array(repeating: "(?, ?)", count: rows).joined(separator: ", ")
    }

    /// Moves `accessed` forward only: an object already as recent keeps its row and its
    /// `accessed` index entry untouched.
    static let update = shapes.map {
        """
        UPDATE OR IGNORE object SET accessed = v.column2 FROM (VALUES \(values($0))) AS v
        WHERE object.id = v.column1 AND object.accessed < v.column2
        """
    }

    /// An object not yet in a queue gets a pending row; at most three accesses count (the
    /// eviction state, EvictionQueues.swift). Only objects still there count.
    static let count = shapes.map {
        """
        INSERT OR IGNORE INTO evict_queue(id, queue, seq, freq, size)
        SELECT v.column1, -1, 0, min(v.column2, 3), 0 FROM (VALUES \(values($0))) AS v
        JOIN object ON object.id = v.column1 WHERE true
        ON CONFLICT(id) DO UPDATE SET freq = min(freq + excluded.freq, 3)
        """
    }
}

extension WriteTransaction {
    /// The statement a transaction's touch runs for an order that counts accesses (nil for
    /// LRU), with its id and its number of accesses: at most three counted; an object not yet
    /// in a queue gets a row. The access flush does the same for many objects at once
    /// (`AccessSQL.count`, above).
    func accessCounter() throws -> Statement? {
        guard let order = store.policy?.order, order != .lru else { return nil }
        return try db.cachedStatement(
            sql: """
                INSERT INTO evict_queue(id, queue, seq, freq, size) VALUES (?1, -1, 0, min(?2, 3), 0)
                ON CONFLICT(id) DO UPDATE SET freq = min(freq + ?2, 3)
                """)
    }
}
