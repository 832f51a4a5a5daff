// The temporary files one query may hold (control.query_temp_bytes, assetd.toml(5), [control]):
// a sort, group or DISTINCT that outgrows memory spills to files, and past the bound the query is
// stopped as query_rejected; within it, the files are given back when the query ends.

import GRDBSQLite
import Testing
import AssetStoreTestSupport

@testable import AssetStore

@Suite struct QueryTempFileTests {
    /// 3,600 distinct values of 2,000 bytes (7 MB) from 60 objects joined with themselves:
    /// past the 2 MB cache of the ephemeral tables that DISTINCT and IN build, so they spill.
    static let spilling =
        "WHERE key IN (SELECT DISTINCT printf('%.*c', 2000, 'x') || a.key || b.key FROM index_default a, index_default b)"

    static func populated(_ configure: @escaping (inout StoreConfiguration) -> Void) throws -> Fixture {
        let f = try Fixture(configure: configure)
        try f.store.write { tx in
            for i in 0..<60 { try tx.put(ref("m", "k\(i)"), value: [:]) }
        }
        return f
    }

    @Test("a query whose temporary files would pass the bound is query_rejected, and the next query works")
    func pastTheBound() throws {
        let f = try Self.populated { $0.queryTempLimit = 1 << 20 }
        let e = expectCode(.queryRejected) { try f.store.query(clause: Self.spilling) }
        #expect(e?.message.contains("bytes of temporary files") == true, "\(String(describing: e))")
        let e2 = expectCode(.queryRejected) {
            try f.store.aggregate(
                function: "COUNT(*)",
                clause: "WHERE key NOT IN (SELECT printf('%.*c', 2000, 'x') || a.key || b.key"
                    + " FROM index_default a, index_default b)")
        }
        #expect(e2?.message.contains("bytes of temporary files") == true, "\(String(describing: e2))")
        #expect(try f.store.aggregate(function: "COUNT(*)") == .value(60))
        #expect(try f.store.query(clause: "ORDER BY key DESC LIMIT 2").map(\.ref.key) == ["k9", "k8"])
    }

    @Test("within the bound the same query runs again and again: its files are given back when it ends")
    func withinTheBound() throws {
        // Far above the about 7 MB of values it spills: one parallel run on a loaded machine
        // saw it need more than 32 MiB (cause not found; the bound is not what is tested here).
        let f = try Self.populated { $0.queryTempLimit = 256 << 20 }
        for _ in 0..<4 {
            #expect(try f.store.query(clause: Self.spilling).isEmpty)
            // One thread: the idle connection handed out is the one the query used.
            let bytes = try f.store.queries.with { $0.takeTempBytes() }
            #expect(bytes?.peak ?? 0 > 0, "the query spilled")
            #expect(bytes?.now == 0, "its files were given back")
        }
        // The count sees a file left open: a statement stopped before its end keeps its table.
        try f.store.queries.with { conn in
            _ = conn.takeTempBytes()
            var stmt: OpaquePointer?
            let sql =
                "SELECT DISTINCT printf('%.*c', 2000, 'x') || a.key || b.key FROM index_default a, index_default b"
            #expect(sqlite3_prepare_v2(conn.handle, sql, -1, &stmt, nil) == SQLITE_OK)
            defer { sqlite3_finalize(stmt) }
            for _ in 0..<3_000 { #expect(sqlite3_step(stmt) == SQLITE_ROW) }
            #expect(conn.takeTempBytes()?.now ?? 0 > 0, "a file held open is counted")
        }
    }

    @Test("a connection dropped with a statement still open keeps its VFS, which the handle still uses")
    func droppedWithAStatementOpen() throws {
        let f = try Self.populated { $0.queryTempLimit = 1 << 20 }
        var conn: QueryConnection? = try QueryConnection(path: f.store.path, timeLimit: 10, tempLimit: 1 << 20)
        let name = try #require(conn?.tempVFSName)
        let stray = try #require(conn?.strayStatement())
        conn = nil
        #expect(sqlite3_vfs_find(name) != nil, "the VFS the open handle goes through is kept")
        // The handle was not closed, so finalizing does not close it through a freed VFS.
        #expect(sqlite3_step(stray) == SQLITE_ROW)
        sqlite3_finalize(stray)
        // Without a stray statement the VFS goes with the connection.
        var plain: QueryConnection? = try QueryConnection(path: f.store.path, timeLimit: 10, tempLimit: 1 << 20)
        let plainName = try #require(plain?.tempVFSName)
        plain = nil
        #expect(sqlite3_vfs_find(plainName) == nil)
    }
}
