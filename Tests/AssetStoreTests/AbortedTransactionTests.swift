// A write transaction that SQLite rolled back by itself (SQLITE_FULL outside a statement
// journal): nothing done after it may reach the database, including statements the engine
// steps through the C API.

import GRDB
import GRDBSQLite
import Testing
@testable import AssetStore
import AssetStoreTestSupport

@Suite struct AbortedTransactionTests {
    @Test("a statement stepped through the C API fails with SQLite's message and its SQL, as GRDB's do")
    func rawStepFailureKeepsSQLiteMessage() throws {
        let f = try Fixture()
        try f.store.write { tx in
            let insert = try tx.db.cachedStatement(sql: "INSERT INTO meta (key, value) VALUES (?, 1)")
            do {
                try insert.executeRaw { Statement.bindText($0, 1, "commit") }  // meta has that key
                Issue.record("the duplicate key went in")
            } catch let e as DatabaseError {
                #expect(e.resultCode == .SQLITE_CONSTRAINT)
                #expect(e.message?.contains("UNIQUE constraint failed: meta.key") == true, "\(e)")
                #expect(e.sql?.contains("INSERT INTO meta") == true, "\(e)")
            }
        }
    }

    @Test(
        "after a put fails with storage_full and SQLite rolls the transaction back, a later put in the same write commits nothing"
    )
    func putAfterAutomaticRollback() throws {
        let f = try Fixture()
        try f.put([(ref("c", "seed"), 1)])
        let big = JSONValue.string(String(repeating: "x", count: 200_000))
        let failure = #expect(throws: StoreError.self) {
            try f.store.write { tx in
                let db = tx.db.sqliteConnection!
                // The database may not grow: the big value needs overflow pages it cannot have.
                #expect(sqlite3_exec(db, "PRAGMA max_page_count = 1", nil, nil, nil) == SQLITE_OK)
                do {
                    try tx.attempt { try tx.put(ref("c", "big"), value: big) }
                    Issue.record("the big put fit")
                } catch {
                    #expect((error as? DatabaseError)?.resultCode == .SQLITE_FULL, "\(error)")
                }
                #expect(sqlite3_get_autocommit(db) != 0, "SQLite rolled the whole transaction back")
                #expect(sqlite3_exec(db, "PRAGMA max_page_count = 1000000", nil, nil, nil) == SQLITE_OK)
                // The caller goes on (as a batch does after one failed request): its next part
                // fails at once, as every statement did in GRDB's transaction block.
                do {
                    try tx.attempt { try tx.put(ref("c", "after"), value: 2) }
                    Issue.record("a part ran after SQLite's rollback")
                } catch {
                    #expect((error as? DatabaseError)?.resultCode == .SQLITE_ABORT, "\(error)")
                }
                #expect(sqlite3_get_autocommit(db) != 0, "no transaction of its own began")
            }
        }
        #expect(failure != nil)
        #expect(failure?.message.contains("database error 4") == true, "\(String(describing: failure))")
        #expect(try !f.exists(ref("c", "after")))
        #expect(try !f.exists(ref("c", "big")))
        #expect(try f.exists(ref("c", "seed")))
    }

    @Test("after SQLite rolls the write transaction back, a GRDB statement of the same write commits nothing")
    func grdbStatementAfterRollback() throws {
        let f = try Fixture()
        let failure = #expect(throws: StoreError.self) {
            try f.store.write { tx in
                // As SQLite does by itself on SQLITE_FULL or an I/O error.
                #expect(sqlite3_exec(tx.db.sqliteConnection, "ROLLBACK", nil, nil, nil) == SQLITE_OK)
                try? tx.db.execute(sql: "INSERT INTO meta (key, value) VALUES ('after-rollback', 1)")
            }
        }
        #expect(failure != nil)
        let row = try f.store.read { r in
            try Int.fetchOne(r.db, sql: "SELECT count(*) FROM meta WHERE key = 'after-rollback'")
        }
        #expect(row == 0)
        try f.put([(ref("c", "next"), 1)])  // the writer is usable again
        #expect(try f.exists(ref("c", "next")))
    }

    @Test("the writer prepares BEGIN IMMEDIATE and COMMIT once and reuses them at every write")
    func transactionStatementsKept() throws {
        let f = try Fixture()
        func kept() throws -> [String: OpaquePointer] {
            f.store.pool.writeWithoutTransaction { db in
                var found: [String: OpaquePointer] = [:]
                var s = sqlite3_next_stmt(db.sqliteConnection, nil)
                while let stmt = s {
                    let sql = String(cString: sqlite3_sql(stmt))
                    if sql.hasPrefix("BEGIN") || sql.hasPrefix("COMMIT") { found[sql] = stmt }
                    s = sqlite3_next_stmt(db.sqliteConnection, stmt)
                }
                return found
            }
        }
        try f.put([(ref("c", "a"), 1)])
        let first = try kept()
        #expect(Set(first.keys) == ["BEGIN IMMEDIATE TRANSACTION", "COMMIT TRANSACTION"])
        try f.put([(ref("c", "b"), 2)])
        #expect(try kept() == first)
        // A body that throws rolls back, and the next write begins with the same statement.
        struct Refused: Error {}
        #expect(throws: Refused.self) {
            try f.store.write { tx in
                try tx.put(ref("c", "c"), value: 3)
                throw Refused()
            }
        }
        #expect(try !f.exists(ref("c", "c")))
        try f.put([(ref("c", "d"), 4)])
        #expect(try kept() == first)
    }
}
