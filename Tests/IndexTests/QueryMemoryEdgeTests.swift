// The edges of a query connection's memory bound (query_memory.c, QueryConnection+Memory.swift,
// KeptStatements.swift): what its kept statements hold, reallocations that shrink, I/O errors a
// refusal causes, and which connections are bounded.

import GRDBSQLite
import Testing
import AssetStoreTestSupport

@testable import AssetStore

@Suite struct QueryMemoryEdgeTests {
    static let notes = IndexDefinition(name: "notes", version: "1", columns: [column("text", .text, "text")])

    static func fixture() throws -> Fixture {
        let f = try Fixture { $0.indexes = [notes] }
        try f.store.write { tx in try tx.put(ref("n", "a"), value: ["text": "x"]) }
        return f
    }

    /// What SQLite says the connection's statements hold, kept or the engine's own.
    static func statementBytes(_ conn: QueryConnection) -> (count: Int, bytes: Int) {
        var count = 0
        var bytes = 0
        var stmt = sqlite3_next_stmt(conn.handle, nil)
        while let s = stmt {
            count += 1
            bytes += Int(sqlite3_stmt_status(s, SQLITE_STMTSTATUS_MEMUSED, 0))
            stmt = sqlite3_next_stmt(conn.handle, s)
        }
        return (count, bytes)
    }

    @Test("kept statements of long clauses hold at most the byte bound, and a longer one is run, not kept")
    func keptStatementBytes() throws {
        let f = try Self.fixture()
        // Distinct clauses with a literal of 200 KB each: a statement keeps its text and the
        // literal, 64 of them were 26 MB.
        for i in 0..<KeptStatements.countLimit {
            let literal = String(repeating: "\(i % 10)", count: 200_000)
            #expect(try f.store.query(index: "notes", clause: "WHERE text = '\(literal)' OR \(i) < 0").isEmpty)
        }
        // One thread: the one idle connection is the one that ran them.
        let held = try f.store.queries.with { Self.statementBytes($0) }
        #expect(held.bytes <= KeptStatements.byteLimit, "\(held.count) statements hold \(held.bytes) bytes")
        #expect(held.count > 1, "some are kept")
        let literal = String(repeating: "y", count: 600_000)
        #expect(try f.store.query(index: "notes", clause: "WHERE text = '\(literal)'").isEmpty)
        let after = try f.store.queries.with { Self.statementBytes($0) }
        #expect(after.count == held.count && after.bytes == held.bytes, "\(after) against \(held)")
        // Kept ones are still found and answer.
        #expect(try f.store.query(index: "notes", clause: "WHERE text = 'x' OR 0 < 0").map(\.ref.key) == ["a"])
    }

    @Test("a block that shrinks is never refused, wherever it was charged, and one that grows within the bound is not")
    func reallocation() throws {
        let f = try Self.fixture()
        try f.store.queries.with { conn in
            let limit = try #require(conn.memoryLimit)
            // Made outside any account and larger than the bound, shrunk while charging.
            let outside = try #require(sqlite3_malloc64(UInt64(limit + (1 << 20))))
            let (smaller, shrunk, grown) = conn.chargingMemory {
                let smaller = sqlite3_realloc64(outside, UInt64(limit + (1 << 19)))
                // The query's own block of most of the bound: shrunk a little, then grown to
                // nearly the bound (the old and new sizes together would pass it).
                let own = sqlite3_malloc64(UInt64(limit - (4 << 20)))
                let shrunk = own.flatMap { sqlite3_realloc64($0, UInt64(limit - (8 << 20))) }
                let grown = shrunk.flatMap { sqlite3_realloc64($0, UInt64(limit - (1 << 20))) }
                return (smaller, shrunk, grown)
            }
            sqlite3_free(smaller ?? outside)
            sqlite3_free(grown ?? shrunk)
            #expect(smaller != nil, "a shrink of an uncharged block")
            #expect(shrunk != nil, "a shrink of the query's own block")
            #expect(grown != nil, "a grow within the bound")
            #expect(conn.memoryPeak == limit - (1 << 20))
            #expect(!conn.tookMemoryRefusal())
        }
    }

    @Test("out of memory after the bound refused an allocation is the bound's; an I/O error stays the disk's")
    func ioErrorAfterRefusal() throws {
        let f = try Self.fixture()
        try f.store.queries.with { conn in
            let limit = try #require(conn.memoryLimit)
            #expect(conn.memoryRefusal(SQLITE_NOMEM) == nil, "nothing was refused")
            let refused = conn.chargingMemory { sqlite3_malloc64(UInt64(limit) + 1) }
            #expect(refused == nil)
            let e = conn.memoryRefusal(SQLITE_NOMEM)
            #expect(e?.code == .queryRejected && e?.message.contains("bytes of memory") == true)
            // SQLITE_IOERR_SHMMAP after a refusal: the disk's error, not hidden as the bound.
            _ = conn.chargingMemory { sqlite3_malloc64(UInt64(limit) + 1) }
            #expect(conn.memoryRefusal(SQLITE_IOERR | (21 << 8)) == nil)
            _ = conn.chargingMemory { sqlite3_malloc64(UInt64(limit) + 1) }
            #expect(conn.memoryRefusal(SQLITE_CONSTRAINT) == nil, "not a failure a refusal causes")
        }
    }

    @Test("only connections for clients' clauses bound their memory, whatever their temporary file bound")
    func clientConnectionsOnly() throws {
        let f = try Self.fixture()
        let engine = try QueryConnection(path: f.store.path, timeLimit: 10, tempLimit: 1 << 20)
        #expect(engine.memoryLimit == nil)
        let client = try QueryConnection(path: f.store.path, timeLimit: 10, clientQueries: true)
        #expect(client.memoryLimit == QueryConnection.memoryBound(lengthLimit: 64 << 20))
        #expect(try f.store.queries.with { $0.memoryLimit } != nil)
    }
}
