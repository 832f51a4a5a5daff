// A database written by an earlier schema opens under the current one: migrations add the
// pin column and queue sizes without touching existing rows, and move the built-in index's
// sizes onto the object rows.

@testable import AssetStore
import AssetStoreTestSupport
import Foundation
import GRDB
import Synchronization
import Testing

@Suite("Schema migrations")
struct MigrationTests {
    /// Closes the fixture's store and makes its database again, empty, as `version` wrote it.
    static func rebuild(_ f: Fixture, as version: String) throws -> DatabasePool {
        f.store.close()
        try FileManager.default.removeItem(atPath: f.dbPath)
        for suffix in ["-wal", "-shm"] { try? FileManager.default.removeItem(atPath: f.dbPath + suffix) }
        let pool = try DatabasePool(path: f.dbPath)
        try Schema.migrator().migrate(pool, upTo: version)
        return pool
    }

    @Test("a v1 database gains pins and queue sizes, and keeps its objects and queue")
    func v1ToCurrent() throws {
        let f = try Fixture()
        let path = try f.makeFile("a", size: 42)
        try f.put([(ref("c", "k"), ["file": .string(path)])])
        let pool = try Self.rebuild(f, as: "v1")
        try pool.write { db in
            try db.execute(
                sql: """
                    INSERT INTO object (collection, key, value, owner, created, modified, accessed)
                    VALUES ('c', 'old', '{}', 'alice', 1, 1, 1);
                    INSERT INTO unlink_queue (path, device, inode, commit_no, queued_at, next_attempt)
                    VALUES ('/nowhere/x', 0, 0, 0, 0, 9e18);
                    """)
        }
        try pool.close()
        try f.reopen(drain: false)
        let (exists, pinned, size, indexes) = try f.store.read { r in
            (
                try r.exists(ref("c", "old")),
                try Bool.fetchOne(r.db, sql: "SELECT pinned FROM object WHERE key = 'old'"),
                try Row.fetchOne(r.db, sql: "SELECT size FROM unlink_queue")?["size"] as Int64?,
                try String.fetchAll(r.db, sql: "SELECT name FROM sqlite_master WHERE type = 'index'")
            )
        }
        #expect(exists && pinned == false && size == nil)
        // Kept only while a quota is configured (Store+OwnerLRU.swift); this store has none.
        #expect(!indexes.contains("index_default__owner_accessed"))
        try f.store.write { tx in try tx.pin(ref("c", "old")) }
        #expect(try f.store.write { tx in try tx.isPinned(ref("c", "old")) }.value)
    }

    @Test("a v3 database's built-in index becomes a view of the object rows, sizes and LRU index kept")
    func v3ToCurrent() throws {
        let f = try Fixture()
        let path = try f.makeFile("a", size: 42)
        let pool = try Self.rebuild(f, as: "v3")
        // As v3 kept them: an object holding a 42-byte file, one holding none, the index rows
        // beside them, and the per-owner LRU index (a quota was configured).
        try pool.write { db in
            try db.execute(
                sql: """
                    INSERT INTO object (id, collection, key, value, owner, created, modified, accessed)
                    VALUES (1, 'c', 'a', '{}', 'alice', 1, 2, 3), (2, 'c', 'b', '{}', 'bob', 4, 5, 6);
                    INSERT INTO file (id, path, size, missing, first_seen) VALUES (1, ?, 42, 0, 1);
                    INSERT INTO edge (name, src, is_file, dst, rules, field) VALUES ('file', 1, 1, 1, 32, NULL);
                    INSERT INTO index_default VALUES (1, 'c', 'a', 'alice', 42, 1, 1, 2, 3), (2, 'c', 'b', 'bob', 0, 0, 4, 5, 6);
                    CREATE INDEX index_default__owner_accessed ON index_default(owner, accessed);
                    """, arguments: [path])
        }
        let rows = { (db: Database) in try Row.fetchAll(db, sql: "SELECT * FROM index_default ORDER BY object_id") }
        let before = try pool.read(rows)
        try pool.close()
        // Opened as the daemon opens it, with the quota that made the LRU index.
        f.store = nil
        var c = f.configuration
        c.policy = PolicyConfiguration()
        c.policy?.quotas = [.init(owner: "alice", maxBytes: 1 << 40)]
        let reported = Mutex<[String]>([])
        let store = try Store(path: f.dbPath, configuration: c) { p in
            reported.withLock { $0.append("\(p.index) \(p.done)/\(p.total)") }
        }
        defer { store.close() }
        #expect(
            reported.withLock { $0 } == [
                "default (moved onto the object rows, once) 0/2", "default (moved onto the object rows, once) 2/2",
                "file_identity (files counted once, schema v11) 0/1",
                "file_identity (files counted once, schema v11) 1/1",
            ])
        try store.read { r in
            let db = r.db
            #expect(try rows(db) == before)
            #expect(
                try String.fetchOne(db, sql: "SELECT type FROM sqlite_master WHERE name = 'index_default'") == "view")
            let onObject = Set(try db.indexes(on: "object").map(\.name))
            #expect(
                onObject.isSuperset(of: [
                    "index_default__owner_size", "index_default__size", "index_default__accessed",
                    "index_default__created",
                    IndexTable.defaultOwnerAccessed,
                ]), "\(onObject.sorted())")
            // Nothing differs from a recomputation (verify's comparison).
            let differing = try Int.fetchOne(
                db,
                sql: """
                    SELECT COUNT(*) FROM (\(IndexTable.defaultSelect) EXCEPT SELECT * FROM index_default)
                    """)
            #expect(differing == 0)
        }
        #expect(try store.query(clause: "WHERE size = 42 AND files = 1").map(\.ref) == [ref("c", "a")])
        #expect(
            try store.aggregate(function: "SUM(size)", groupBy: ["owner"])
                == .rows([["owner": "alice", "value": 42], ["owner": "bob", "value": 0]]))
    }
}

/// Every way to the current schema ends at the same one.
@Suite("Schema migrations: one schema")
struct MigrationSchemaTests {
    /// Every table, index, view and trigger, as SQLite keeps their text.
    static func schema(_ db: Database) throws -> [String] {
        try String.fetchAll(
            db,
            sql: """
                SELECT type || ' ' || name || ' ON ' || tbl_name || ': ' || sql FROM sqlite_master
                WHERE name NOT LIKE 'sqlite_%' AND name != 'grdb_migrations' ORDER BY type, name
                """)
    }

    @Test(
        "a store upgraded from any earlier schema ends with a new store's schema",
        arguments: Array(Schema.migrator().migrations.dropLast()))
    func upgradedMatchesNew(_ version: String) throws {
        let fresh = try Fixture()
        let expected = try fresh.store.read { try Self.schema($0.db) }
        let f = try Fixture()
        let pool = try MigrationTests.rebuild(f, as: version)
        try pool.close()
        try f.reopen(drain: false)
        #expect(try f.store.read { try Self.schema($0.db) } == expected)
    }

    @Test("queue rows are found by path through an index: a put of a new file, forget, the orphan check")
    func queueFoundByPath() throws {
        let f = try Fixture()
        let plans = try f.store.read { r in
            try [
                "DELETE FROM unlink_queue WHERE path = ?",
                "SELECT path FROM unlink_queue WHERE path IN (SELECT value FROM json_each(?))",
            ].map { sql in
                try Row.fetchAll(r.db, sql: "EXPLAIN QUERY PLAN " + sql, arguments: ["[]"])
                    .map { $0["detail"] as String }.joined(separator: "; ")
            }
        }
        // Without it each of them reads the whole queue ("SCAN unlink_queue").
        for plan in plans { #expect(plan.contains("INDEX unlink_queue_path"), "\(plan)") }
    }

    @Test("the built-in index's SQLite indexes are the declared ones, from v4 on")
    func declaredIndexes() throws {
        let f = try Fixture()
        let declared = IndexTable.defaultIndexes.map { "\($0.name)(\($0.columns.joined(separator: ",")))" }
        let shown = { (db: Database) in
            try db.indexes(on: "object").filter { $0.name.hasPrefix("index_default__") }
                .map { "\($0.name)(\($0.columns.joined(separator: ",")))" }.sorted()
        }
        #expect(try f.store.read { try shown($0.db) } == declared.sorted())
        // v4 made the built-in index's SQLite indexes from a declaration that had kept the
        // owner index without collection and key, so a store upgraded from v3 or earlier
        // built that index twice.
        let pool = try MigrationTests.rebuild(f, as: "v4")
        defer { try? pool.close() }
        #expect(try pool.read(shown) == declared.sorted())
    }
}
