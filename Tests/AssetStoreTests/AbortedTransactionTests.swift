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
                // The caller goes on (as a batch does after one failed request).
                try? tx.put(ref("c", "after"), value: 2)
            }
        }
        #expect(failure != nil)
        #expect(try !f.exists(ref("c", "after")))
        #expect(try !f.exists(ref("c", "big")))
        #expect(try f.exists(ref("c", "seed")))
    }
}
