// The state of the S3-FIFO and SIEVE eviction orders (assetd.toml(5), `order`), kept in the
// store so a restart resumes it: each object's queue, place (`seq`, larger is newer) and
// access count, and the ghost record of keys S3-FIFO evicted from its small queue. Touches
// count through the batched access flush (Store+Access.swift); a new object joins a queue at
// the next run that evicts, in id order (its put pays nothing). Every change happens in the
// run's transaction, so a dry run rolls it back with the rest of its plan.
//
// The rules follow the published algorithms as libCacheSim implements them, so that
// `scripts/bench.sh eviction` can compare the two: S3-FIFO admits to a small queue (5% of
// the capacity, libCacheSim's parameter set to the store's: docs/EVICTION.md) unless the key
// is in the ghost record, promotes an object accessed twice there to the main queue, and gives a main-queue object one more pass per access (at most
// three); SIEVE spares an object accessed since its hand last passed and moves on. A run
// spares one object at most as often as they would between two reads (`spared`).

import GRDB

/// An object at the evicting end of a queue.
struct QueueCandidate {
    var id: Int64
    var ref: ObjectRef
    var queue: Int
    var seq: Int64
    var freq: Int
    var size: Int64
    var pinned: Bool
    var created: Double
}

/// The queues of one order, loaded at the start of each batch and saved before its commit.
final class EvictionQueues {
    static let pending = -1
    static let small = 0
    static let main = 1
    /// Share of the capacity for S3-FIFO's small queue, and for its ghost record
    /// (docs/EVICTION.md, S3-FIFO's parameters: the setting chosen over 20 seeds).
    static let smallShare = 0.05
    static let ghostShare = 0.5
    /// Accesses in the small queue that earn a place in the main one.
    static let promoteAt = 2
    /// The ghost record never holds more keys than this, whatever their sizes.
    static let maxGhostKeys = 1_000_000

    let order: EvictionOrder
    let capacity: Int64
    var smallCapacity: Int64 { Int64(Double(capacity) * EvictionQueues.smallShare) }
    var mainCapacity: Int64 { capacity - smallCapacity }
    var ghostCapacity: Int64 { Int64(Double(capacity) * EvictionQueues.ghostShare) }

    /// The last place given, to queue rows and ghost keys alike (set by EvictionGhost.swift too).
    var seq: Int64 = 0
    /// SIEVE: the oldest place the hand examines next (0: from the tail).
    private(set) var hand: Int64 = 0
    /// S3-FIFO: until the first eviction, a full small queue admits to the main one.
    private(set) var hasEvicted = false
    /// Objects with a place in a queue: those above are new.
    private(set) var admittedThrough: Int64 = 0
    private(set) var smallBytes: Int64 = 0
    private(set) var mainBytes: Int64 = 0
    /// The ghost record's bytes and keys, kept by EvictionGhost.swift.
    var ghostBytes: Int64 = 0
    var ghostKeys = 0
    /// Objects this run passed over (protected): meeting one again means its queue is done.
    private var skipped = Set<Int64>()
    private var exhausted = Set<Int>()
    /// Objects read ahead at the evicting end of each queue (`first`).
    private struct Head {
        var rows: [QueueCandidate] = []
        var next = 0
    }
    private var heads: [Int: Head] = [:]
    static let readAhead = 128

    var occupied: Int64 { smallBytes.adding(saturating: mainBytes) }

    init(order: EvictionOrder, capacity: Int64) {
        self.order = order
        self.capacity = max(capacity, 1)
    }

    /// Reads the saved state; a store whose state belongs to another order starts afresh,
    /// every object becoming new (the access counts of placed objects go with their places;
    /// `newObjects` still sees from `accessed` which objects were read since their put).
    func load(_ db: Database) throws {
        let saved = try String.fetchOne(db, sql: "SELECT value FROM meta WHERE key = 'evict.order'")
        if saved != order.rawValue {
            try db.execute(sql: "DELETE FROM evict_queue WHERE queue != -1; DELETE FROM evict_ghost")
            try db.execute(
                sql: "INSERT OR REPLACE INTO meta(key, value) VALUES ('evict.order', ?)", arguments: [order.rawValue])
            (seq, hand, hasEvicted, admittedThrough) = (0, 0, false, 0)
            try save(db)
        } else {
            func value(_ k: String) throws -> Int64 {
                try Int64.fetchOne(db, sql: "SELECT value FROM meta WHERE key = ?", arguments: ["evict." + k]) ?? 0
            }
            (seq, hand, hasEvicted, admittedThrough) = (
                try value("seq"), try value("hand"), try value("evicted") != 0, try value("admitted")
            )
        }
        try recount(db)
        let ghost = try Row.fetchOne(db, sql: "SELECT \(Sizes.sum("size")), COUNT(*) FROM evict_ghost")
        ghostBytes = ghost?[0] ?? 0
        ghostKeys = ghost?[1] ?? 0
    }

    /// Makes the next run of an order other than LRU start afresh (`load`).
    static func forgetOrder(_ db: Database) throws {
        try db.execute(sql: "DELETE FROM meta WHERE key = 'evict.order'")
    }

    /// Forgets the saved state if it belongs to another order than `order`.
    static func noteOrder(_ db: Database, _ order: EvictionOrder) throws {
        let saved = try String.fetchOne(db, sql: "SELECT value FROM meta WHERE key = 'evict.order'")
        if let saved, saved != order.rawValue { try forgetOrder(db) }
    }

    func save(_ db: Database) throws {
        let s = try db.cachedStatement(sql: "INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)")
        for (k, v) in [("seq", seq), ("hand", hand), ("evicted", hasEvicted ? 1 : 0), ("admitted", admittedThrough)] {
            try s.execute(arguments: ["evict." + k, v])
        }
    }

    /// Objects not yet in a queue, oldest first, with the accesses counted since their put.
    /// `read`: accessed since its last put, whatever order counted (or did not count) it.
    func newObjects(
        _ db: Database, limit: Int
    ) throws -> [(id: Int64, ref: ObjectRef, size: Int64, freq: Int, read: Bool)] {
        try Row.fetchAll(
            db.cachedStatement(
                sql: """
                    SELECT d.id, d.collection, d.key, d.size, COALESCE(q.freq, 0), d.accessed > d.modified
                    FROM object d LEFT JOIN evict_queue q ON q.id = d.id WHERE d.id > ? ORDER BY d.id LIMIT ?
                    """), arguments: [admittedThrough, limit]
        ).map { (id: $0[0], ref: ObjectRef($0[1], $0[2]), size: $0[3], freq: $0[4], read: $0[5]) }
    }

    /// Gives a new object its place (a rejected one the small queue's newest).
    func admit(_ db: Database, id: Int64, ref: ObjectRef, size: Int64, freq: Int, rejected: Bool) throws {
        var queue = EvictionQueues.main
        if order == .s3fifo {
            if rejected {
                queue = EvictionQueues.small
            } else if try removeGhost(db, ref) || size >= smallCapacity {
                queue = EvictionQueues.main
            } else {
                queue = !hasEvicted && smallBytes >= smallCapacity ? EvictionQueues.main : EvictionQueues.small
            }
        }
        seq += 1
        try db.cachedStatement(
            sql: """
                INSERT INTO evict_queue(id, queue, seq, freq, size) VALUES (?1, ?2, ?3, ?4, ?5)
                ON CONFLICT(id) DO UPDATE SET queue = ?2, seq = ?3, freq = ?4, size = ?5
                """
        ).execute(arguments: [id, queue, seq, freq, size])
        add(size, to: queue)
        admittedThrough = max(admittedThrough, id)
    }

    /// Objects the last `next` spared (moved on or cleared): each is work, charged to the batch.
    private(set) var moved = 0
    /// The last `next` stopped at its limit of moves, with no candidate yet.
    private(set) var paused = false
    /// Times this run spared each object. A real run commits between batches, and the reads
    /// flushed in between raise the access counts again: spared each time, objects read faster
    /// than a pass took kept a run committing batches that freed nothing. So a run spares an
    /// object at most as often as the order would between two reads (`maxSpares`); with no
    /// read between batches (a dry run, an idle store) the cap never binds.
    private var spared: [Int64: Int] = [:]
    private var maxSpares: Int { order == .sieve ? 1 : 3 }
    /// S3-FIFO: the queue of the eviction a pause stopped, which the next batch goes on in.
    private var resume: Int?

    /// Counts a spare of `id`; false when this run spared it `maxSpares` times already.
    private func spare(_ id: Int64) -> Bool {
        let n = spared[id, default: 0]
        guard n < maxSpares else { return false }
        spared[id] = n + 1
        return true
    }

    /// The next object the order would evict, after moving those it spares, at most `moves`
    /// of them: every object may be spared once (SIEVE) or three times (S3-FIFO), and one call
    /// that spared them all held the writer as long as a walk over the whole store. Nil when
    /// every queue is empty or has only objects this run had to pass over, or `paused`.
    func next(_ db: Database, moves: Int) throws -> (QueueCandidate, String)? {
        moved = 0
        paused = false
        switch order {
        case .lru: return nil
        case .sieve: return try nextSieve(db, moves: moves)
        case .s3fifo: return try nextS3FIFO(db, moves: moves)
        }
    }

    /// Counts a move; true when the limit is reached (`paused`).
    private func pause(at limit: Int) -> Bool {
        moved += 1
        paused = moved >= limit
        return paused
    }

    /// The oldest object of `queue` with a place at or after `from`. Read ahead: the heads
    /// hold the next objects of each queue in order, so a run pays one query per `readAhead`
    /// candidates, not one per candidate. A head is a prefix of its queue as long as each
    /// object taken from it is dropped (`pop`) when it moves or goes, and every other change
    /// clears it (`forgetHeads`): a new place is always after every place read.
    private func first(_ db: Database, queue: Int, from: Int64 = 0) throws -> QueueCandidate? {
        var head = heads[queue] ?? Head()
        while head.next < head.rows.count && head.rows[head.next].seq < from { head.next += 1 }
        if head.next == head.rows.count {
            head = Head(rows: try read(db, queue: queue, from: from))
        }
        heads[queue] = head
        return head.next < head.rows.count ? head.rows[head.next] : nil
    }

    private func read(_ db: Database, queue: Int, from: Int64) throws -> [QueueCandidate] {
        try Row.fetchAll(
            db.cachedStatement(
                sql: """
                    SELECT q.id, d.collection, d.key, q.seq, q.freq, q.size, d.pinned, d.created
                    FROM evict_queue q JOIN object d ON d.id = q.id
                    WHERE q.queue = ? AND q.seq >= ? ORDER BY q.seq LIMIT ?
                    """), arguments: [queue, from, EvictionQueues.readAhead]
        ).map {
            QueueCandidate(
                id: $0[0], ref: ObjectRef($0[1], $0[2]), queue: queue, seq: $0[3], freq: $0[4], size: $0[5],
                pinned: $0[6], created: $0[7])
        }
    }

    /// `c`, the head of its queue, moved or went.
    private func pop(_ c: QueueCandidate) {
        guard var head = heads[c.queue], head.next < head.rows.count, head.rows[head.next].id == c.id else {
            heads[c.queue] = nil
            return
        }
        head.next += 1
        heads[c.queue] = head
    }

    /// The store changed under the heads (a new batch, a deletion that took other objects).
    func forgetHeads() { heads = [:] }

    private func place(_ db: Database, _ c: QueueCandidate, queue: Int, freq: Int) throws {
        pop(c)
        seq += 1
        try db.cachedStatement(sql: "UPDATE evict_queue SET queue = ?, seq = ?, freq = ? WHERE id = ?")
            .execute(arguments: [queue, seq, freq, c.id])
        if queue != c.queue {
            add(-c.size, to: c.queue)
            add(c.size, to: queue)
        }
    }

    private func nextSieve(_ db: Database, moves: Int) throws -> (QueueCandidate, String)? {
        var wrapped = false
        while true {
            guard let c = try first(db, queue: EvictionQueues.main, from: hand) else {
                if wrapped || hand == 0 { return nil }
                hand = 0
                heads[EvictionQueues.main] = nil
                wrapped = true
                continue
            }
            if skipped.contains(c.id) { return nil }
            hand = c.seq + 1
            if c.freq > 0 && spare(c.id) {
                pop(c)
                try db.cachedStatement(sql: "UPDATE evict_queue SET freq = 0 WHERE id = ?").execute(arguments: [c.id])
                if pause(at: moves) { return nil }
                continue
            }
            // Past the newest the hand starts again from the oldest, as the reference's does,
            // not at the objects placed after this one went.
            if try !hasNewer(db, c) {
                hand = 0
                heads[EvictionQueues.main] = nil
            }
            let why = c.freq > 0 ? "read again since this run spared it" : "not accessed since the hand last passed"
            return (c, "sieve: " + why)
        }
    }

    /// True if `c`'s queue has an object placed after it: in its read-ahead head if there, else
    /// one indexed look-up.
    private func hasNewer(_ db: Database, _ c: QueueCandidate) throws -> Bool {
        if let head = heads[c.queue], head.next + 1 < head.rows.count, head.rows[head.next].id == c.id {
            return true
        }
        return try Bool.fetchOne(
            db.cachedStatement(sql: "SELECT EXISTS (SELECT 1 FROM evict_queue WHERE queue = ? AND seq > ?)"),
            arguments: [c.queue, c.seq]) ?? false
    }

    private func nextS3FIFO(_ db: Database, moves: Int) throws -> (QueueCandidate, String)? {
        hasEvicted = true
        // One queue per eviction, chosen once, as the reference does: a pause keeps it (the
        // promotions before it may have grown the main queue past its share).
        var queue =
            resume ?? (mainBytes > mainCapacity || smallBytes <= 0 ? EvictionQueues.main : EvictionQueues.small)
        resume = nil
        while true {
            if exhausted.contains(queue) {
                queue = 1 - queue
                if exhausted.contains(queue) { return nil }
            }
            guard let c = try first(db, queue: queue), !skipped.contains(c.id) else {
                exhausted.insert(queue)
                continue
            }
            if queue == EvictionQueues.small {
                if c.freq >= EvictionQueues.promoteAt && spare(c.id) {
                    try place(db, c, queue: EvictionQueues.main, freq: 0)
                    if pause(at: moves) {
                        resume = queue
                        return nil
                    }
                    continue
                }
                return (c, "s3fifo: not accessed again in the small queue")  // a spared one went to main
            }
            if c.freq >= 1 && spare(c.id) {
                try place(db, c, queue: EvictionQueues.main, freq: min(c.freq, 3) - 1)
                if pause(at: moves) {
                    resume = queue
                    return nil
                }
                continue
            }
            return (c, "s3fifo: " + (c.freq >= 1 ? Self.sparedEnough : "no access left in the main queue"))
        }
    }

    private static let sparedEnough = "read again since this run spared it three times"

    /// After `c` was evicted (its row went with the object).
    func evicted(_ db: Database, _ c: QueueCandidate) throws {
        pop(c)
        add(-c.size, to: c.queue)
        if order == .s3fifo && c.queue == EvictionQueues.small { try addGhost(db, c.ref, size: c.size) }
    }

    /// `c` is protected now: it goes to the back of its queue (SIEVE's hand just moves on).
    func skip(_ db: Database, _ c: QueueCandidate) throws {
        skipped.insert(c.id)
        if order == .s3fifo { try place(db, c, queue: c.queue, freq: c.freq) } else { pop(c) }
    }

    /// Adds `bytes` (negative: takes them) to `queue`'s total, saturating: sizes add up past
    /// Int64.max where objects share files of absurd sizes.
    private func add(_ bytes: Int64, to queue: Int) {
        if queue == EvictionQueues.small {
            smallBytes = smallBytes.adding(saturating: bytes)
        } else {
            mainBytes = mainBytes.adding(saturating: bytes)
        }
    }

    /// Queue byte totals again, after a deletion took more objects than the one chosen.
    func recount(_ db: Database) throws {
        forgetHeads()
        smallBytes = try Int64.fetchOne(db, sql: "SELECT \(Sizes.sum("size")) FROM evict_queue WHERE queue = 0") ?? 0
        mainBytes = try Int64.fetchOne(db, sql: "SELECT \(Sizes.sum("size")) FROM evict_queue WHERE queue = 1") ?? 0
    }
}
