// A step back of the wall clock (an NTP correction of a clock that ran ahead, `date -s`)
// leaves the rows queued before it with their next attempt as far ahead as the step: a day's
// step would keep every queued file a day. The queue is bounded instead: no row waits longer
// from now than its delay or backoff allows (assetd(8), DATA MODEL, The unlink queue). Once per
// step seen in this process (ClockSteps.swift); at an open, `endLeaseDeferrals` bounds the
// rows the same way, as a step between two runs is seen by none.

import GRDB
import Synchronization

extension Store {
    /// Bounds the queue's next attempts if the wall clock stepped back since the last bound, in
    /// write transactions of `boundChunk` rows by id: after a day's step every row moves, and one
    /// UPDATE of a queue of a million rows held the writer from every client for seconds.
    func boundQueue(after now: ClockSteps.Reading) throws {
        guard now.stepsBack != stepsBackBounded.load(ordering: .relaxed) else { return }
        var after: Int64 = 0
        var moved = 0
        while true {
            let chunk = try Store.mapErrors {
                try pool.write { db in
                    try Store.boundQueue(
                        db, now: now.wall, delay: configuration.unlinkDelay, after: after,
                        limit: Store.boundChunk.load(ordering: .relaxed))
                }
            }
            boundTransactions.add(1, ordering: .relaxed)
            moved += chunk.moved
            guard let last = chunk.last else { break }
            after = last
        }
        if moved > 0 { queueRowsMoved.add(1, ordering: .relaxed) }
        stepsBackBounded.store(now.stepsBack, ordering: .relaxed)
    }

    /// Rows a bound's write transaction takes (tests lower it).
    static let boundChunk = Atomic<Int>(1000)

    /// Makes every row not parked due by `now` plus `files.unlink_delay` (never tried) or the
    /// longest retry delay (failed before) at the latest; returns how many moved. Its queue time
    /// moves back to `now` too: left on the clock before the step, a step forward later made the
    /// row look queued after that step, judged by the wall clock alone, and due at once. A row a lease
    /// defers is deferred again by the sweep that finds it due, to its lease's end as the wall
    /// clock reads now.
    /// Of the rows with an id past `after`, the first `limit`; returns how many moved and the
    /// last id looked at, nil once no row is left past it.
    static func boundQueue(
        _ db: Database, now: Double, delay: Double, after: Int64, limit: Int
    ) throws -> (moved: Int, last: Int64?) {
        let ids = try Int64.fetchAll(
            db, sql: "SELECT id FROM unlink_queue WHERE id > ? ORDER BY id LIMIT ?", arguments: [after, limit])
        guard let first = ids.first, let last = ids.last else { return (0, nil) }
        try db.execute(
            sql: """
                UPDATE unlink_queue SET next_attempt = ?1 + CASE WHEN attempts = 0 THEN ?2 ELSE ?3 END,
                    queued_at = MIN(queued_at, ?1)
                WHERE id BETWEEN ?5 AND ?6
                AND next_attempt > ?1 + CASE WHEN attempts = 0 THEN ?2 ELSE ?3 END AND next_attempt < ?4
                """, arguments: [now, delay, Store.maximumRetryDelay, Store.parkedUntil, first, last])
        return (db.changesCount, ids.count < limit ? nil : last)
    }
}
