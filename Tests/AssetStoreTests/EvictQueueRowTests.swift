// An object's row in the eviction queues (S3-FIFO, SIEVE) goes with the object, whichever
// statement deletes it: the rule worklist's one at a time or a policy batch's set-based
// delete. Up to schema v8 a trigger did it; from v9 the deleting statements do.

@testable import AssetStore
import AssetStoreTestSupport
import Foundation
import GRDB
import Testing

@Suite("Eviction queue rows of deleted objects")
struct EvictQueueRowTests {
    private static func queueRows(_ f: Fixture) throws -> [String] {
        try f.store.read { r in
            try String.fetchAll(
                r.db,
                sql: "SELECT COALESCE(d.key, 'gone') FROM evict_queue q LEFT JOIN object d ON d.id = q.id ORDER BY q.id"
            )
        }
    }

    private static func triggers(_ f: Fixture) throws -> [String] {
        try f.store.read { r in try String.fetchAll(r.db, sql: "SELECT name FROM sqlite_master WHERE type = 'trigger'")
        }
    }

    /// Counted accesses give each object a queue row (a pending one until a run places it).
    private static func touchAll(_ f: Fixture, _ keys: [String]) throws {
        for k in keys { try f.store.touch(ref("c", k)) }
        try f.store.flushAccesses()
    }

    @Test("a delete and a policy batch remove the deleted objects' queue rows, and no others")
    func deletionsRemoveQueueRows() throws {
        let f = try Fixture { $0.policy = PolicyConfiguration() }  // S3-FIFO counts accesses
        let keys = (0..<6).map { "k\($0)" }
        for k in keys { try f.put([(ref("c", k), ["n": 1])]) }
        f.clock.advance(3600)
        try f.put([(ref("c", "young"), ["n": 1])])
        try Self.touchAll(f, keys + ["young"])
        #expect(try Self.queueRows(f) == keys + ["young"])
        #expect(try Self.triggers(f).isEmpty)

        try f.delete(ref("c", "k0"))  // the rule worklist
        #expect(try Self.queueRows(f) == Array(keys.dropFirst()) + ["young"])
        let plan = try f.store.expire(collection: "c", olderThan: 60, idle: nil)  // set-based
        #expect(plan.objects.map(\.ref.key) == Array(keys.dropFirst()))
        #expect(try Self.queueRows(f) == ["young"])
    }

    @Test("a v8 database loses the trigger and keeps its queue rows; deletions still remove them")
    func v8ToCurrent() throws {
        let f = try Fixture { $0.policy = PolicyConfiguration() }
        let pool = try MigrationTests.rebuild(f, as: "v8")
        try pool.write { db in
            try db.execute(
                sql: """
                    INSERT INTO object (id, collection, key, value, owner, created, modified, accessed)
                    VALUES (1, 'c', 'a', '{}', 'alice', 1, 1, 1), (2, 'c', 'b', '{}', 'alice', 1, 1, 1);
                    INSERT INTO evict_queue (id, queue, seq, freq, size) VALUES (1, 1, 1, 0, 0), (2, 0, 2, 1, 0);
                    """)
            #expect(
                try String.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE type = 'trigger'") == [
                    "evict_queue_gone"
                ])
        }
        try pool.close()
        try f.reopen(drain: false)
        #expect(try Self.triggers(f).isEmpty)
        #expect(try Self.queueRows(f) == ["a", "b"])
        try f.delete(ref("c", "a"))
        #expect(try Self.queueRows(f) == ["b"])
    }
}
