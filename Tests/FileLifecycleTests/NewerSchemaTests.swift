// A database a newer assetd upgraded: GRDB passes over migrations it does not know, so without
// a check this binary would write rows the newer schema's rules do not expect.

import AssetStore
import AssetStoreTestSupport
import Foundation
import GRDB
import Testing

@Suite struct NewerSchemaTests {
    /// What an open that goes on writes first: lease numbers and a commit in `meta`, the
    /// schema's migrations. (GRDB's pool open creates and drops a table in an empty WAL.)
    func written(_ path: String) throws -> [String] {
        try DatabaseQueue(path: path).read { db in
            try String.fetchAll(db, sql: "SELECT key || '=' || value FROM meta ORDER BY key")
                + String.fetchAll(db, sql: "SELECT identifier FROM grdb_migrations ORDER BY identifier")
        }
    }

    @Test("a schema with a migration this binary does not know is refused, to write and to read")
    func newerSchemaRefused() throws {
        let f = try Fixture()
        try f.put([(ref("c", "k"), [:])])
        f.store.close()
        try DatabaseQueue(path: f.dbPath).write { db in
            try db.execute(sql: "INSERT INTO grdb_migrations(identifier) VALUES ('v99')")
        }
        let before = try written(f.dbPath)
        #expect(before.contains("v99"))
        var readOnly = f.configuration
        readOnly.readOnly = true
        for c in [f.configuration, readOnly] {
            let e = expectCode(.conflict) { _ = try Store(path: f.dbPath, configuration: c) }
            #expect(e?.message.contains("newer assetd (schema v99") == true, "\(String(describing: e))")
            #expect(e.map(Store.isAdminRefusal) == true)
        }
        #expect(try written(f.dbPath) == before, "nothing written")
        try DatabaseQueue(path: f.dbPath).write { db in
            try db.execute(sql: "DELETE FROM grdb_migrations WHERE identifier = 'v99'")
        }
        f.store = try Store(path: f.dbPath, configuration: f.configuration)
        #expect(try f.store.read { try $0.get(ref("c", "k")) } != nil)
    }
}
