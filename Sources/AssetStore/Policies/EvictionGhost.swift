// S3-FIFO's ghost record (assetd.toml(5), `order`): the keys its small queue evicted, by a hash
// of collection and key, bounded by bytes as the reference's is and by a number of keys. A key
// found there sends its object straight to the main queue; a large new object whose key is
// not there is evicted first (docs/EVICTION.md, large objects).

import GRDB

extension EvictionQueues {
    /// True if S3-FIFO will not keep a new object: one as large as its small queue would leave
    /// it before a second access could count there, so it is kept (in the main queue) only if
    /// it was read since its put or its key is in the ghost record. The caller evicts a
    /// rejected one once placed and remembers its key (`evicted`), so a second put keeps it.
    func rejects(_ db: Database, ref: ObjectRef, size: Int64, read: Bool) throws -> Bool {
        guard order == .s3fifo && size >= smallCapacity && !read else { return false }
        return try ghostKeys == 0
            || Int64.fetchOne(
                db.cachedStatement(sql: "SELECT 1 FROM evict_ghost WHERE hash = ?"),
                arguments: [EvictionQueues.hash(ref)])
                == nil
    }

    static func hash(_ ref: ObjectRef) -> Int64 {
        var h: UInt64 = 0xcbf2_9ce4_8422_2325
        for b in ref.collection.utf8 + [0] + ref.key.utf8 {
            h = (h ^ UInt64(b)) &* 0x100_0000_01b3
        }
        return Int64(bitPattern: h)
    }

    func removeGhost(_ db: Database, _ ref: ObjectRef) throws -> Bool {
        guard ghostKeys > 0,
            let size = try Int64.fetchOne(
                db.cachedStatement(sql: "DELETE FROM evict_ghost WHERE hash = ? RETURNING size"),
                arguments: [EvictionQueues.hash(ref)])
        else { return false }
        ghostBytes = ghostBytes.subtracting(saturating: size)
        ghostKeys -= 1
        return true
    }

    func addGhost(_ db: Database, _ ref: ObjectRef, size: Int64) throws {
        // A key counts as at most the small queue's bytes: only a large object's is larger,
        // and counted whole it would crowd the record out or not fit in it at all.
        let size = min(size, smallCapacity)
        seq += 1
        try db.cachedStatement(
            sql: "INSERT INTO evict_ghost(hash, seq, size) VALUES (?, ?, ?) ON CONFLICT(hash) DO NOTHING"
        ).execute(arguments: [EvictionQueues.hash(ref), seq, size])
        if db.changesCount > 0 {
            ghostBytes = ghostBytes.adding(saturating: size)
            ghostKeys += 1
        }
        // Bounded by bytes as the reference is, and by a number of keys whatever their sizes.
        while ghostBytes > ghostCapacity || ghostKeys > EvictionQueues.maxGhostKeys {
            guard
                let size = try Int64.fetchOne(
                    db.cachedStatement(
                        sql: """
                            DELETE FROM evict_ghost WHERE hash = (SELECT hash FROM evict_ghost ORDER BY seq LIMIT 1)
                            RETURNING size
                            """))
            else { break }
            ghostBytes = ghostBytes.subtracting(saturating: size)
            ghostKeys -= 1
        }
    }
}
