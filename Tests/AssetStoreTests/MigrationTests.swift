// A database written by the first schema opens under the current one: migrations add the
// pin column and queue sizes without touching existing rows.

@testable import AssetStore
import AssetStoreTestSupport
import Foundation
import GRDB
import Testing

@Suite("Schema migrations")
struct MigrationTests {
    @Test("a v1 database gains pins and queue sizes, and keeps its objects and queue")
    func v1ToCurrent() throws {
        let f = try Fixture()
        let path = try f.makeFile("a", size: 42)
        try f.put([(ref("c", "k"), ["file": .string(path)])])
        f.store.close()
        // Rebuild the database as v1 wrote it.
        try FileManager.default.removeItem(atPath: f.dbPath)
        for suffix in ["-wal", "-shm"] { try? FileManager.default.removeItem(atPath: f.dbPath + suffix) }
        let pool = try DatabasePool(path: f.dbPath)
        try Schema.migrator().migrate(pool, upTo: "v1")
        try pool.write { db in
            try db.execute(sql: """
                INSERT INTO object (collection, key, value, owner, created, modified, accessed)
                VALUES ('c', 'old', '{}', 'alice', 1, 1, 1);
                INSERT INTO unlink_queue (path, device, inode, commit_no, queued_at, next_attempt)
                VALUES ('/nowhere/x', 0, 0, 0, 0, 9e18);
                """)
        }
        try pool.close()
        try f.reopen(drain: false)
        let (exists, pinned, size, indexes) = try f.store.read { r in
            (try r.exists(ref("c", "old")),
             try Bool.fetchOne(r.db, sql: "SELECT pinned FROM object WHERE key = 'old'"),
             try Row.fetchOne(r.db, sql: "SELECT size FROM unlink_queue")?["size"] as Int64?,
             try String.fetchAll(r.db, sql: "SELECT name FROM sqlite_master WHERE type = 'index'"))
        }
        #expect(exists && pinned == false && size == nil)
        // Kept only while a quota is configured (Store+OwnerLRU.swift); this store has none.
        #expect(!indexes.contains("index_default__owner_accessed"))
        try f.store.write { tx in try tx.pin(ref("c", "old")) }
        #expect(try f.store.write { tx in try tx.isPinned(ref("c", "old")) }.value)
    }
}
