// What the rule worklist's deletions write and report, row by row: the unlink queue row copies
// the registry's identity of the file and the deleting commit; an object's edges go both ways,
// reported in index order with both ends named; a file a rule deletes takes every other edge to
// it, an edge whose source row is missing included (deleted, not reported).

import Foundation
import GRDB
import Testing
@testable import AssetStore
import AssetStoreTestSupport

@Suite struct DeletionRowsTests {
    static let identity = ["path", "size", "device", "inode", "birth", "generation", "ctime"]

    @Test("a deleted object's file is queued with its registry identity, size and the deleting commit")
    func queueRowCopiesIdentity() throws {
        let f = try Fixture { $0.unlinkDelay = 30 }
        let path = try f.makeFile("q/one.bin", size: 123)
        let a = ref("assets", "a")
        try f.put([(a, ["file": .string(path)])])
        let registered = try f.store.read { r in
            try Row.fetchOne(r.db, sql: "SELECT \(Self.identity.joined(separator: ", ")) FROM file")
        }
        #expect(registered?["device"] as Int64? != nil)
        #expect(registered?["size"] as Int64? == 123)
        f.clock.advance(5)
        let report = try f.delete(a)
        #expect(report.filesQueued == [path])
        let queued = try f.store.read { r in
            try Row.fetchAll(
                r.db,
                sql: """
                    SELECT \(Self.identity.joined(separator: ", ")), commit_no, queued_at, next_attempt, attempts
                    FROM unlink_queue
                    """)
        }
        try #require(queued.count == 1)
        for column in Self.identity {
            #expect(queued[0][column] as DatabaseValue == registered?[column] as DatabaseValue?, "\(column)")
        }
        #expect(queued[0]["commit_no"] as Int64 == report.commit)
        #expect(queued[0]["queued_at"] as Double == f.clock.now)
        #expect(queued[0]["next_attempt"] as Double == f.clock.now + 30)
        #expect(queued[0]["attempts"] as Int64 == 0)
        #expect(try rowCount(f, "file") == 0 && rowCount(f, "edge") == 0 && rowCount(f, "object") == 0)
    }

    @Test("a file registered before it existed is queued with the identity of the file there at delete")
    func unseenFileIdentifiedAtDelete() throws {
        let f = try Fixture()
        let path = f.root + "/later/made.bin"
        let a = ref("assets", "a")
        try f.put([(a, ["file": .string(path)])])
        #expect(try f.store.read { r in try Int64.fetchOne(r.db, sql: "SELECT device FROM file") } == nil)
        try f.makeFile("later/made.bin", size: 7)
        var st = stat()
        try #require(lstat(path, &st) == 0)
        let report = try f.delete(a)
        #expect(report.filesQueued == [path])
        let row = try f.store.read { r in
            try Row.fetchOne(r.db, sql: "SELECT device, inode, commit_no FROM unlink_queue")
        }
        #expect(row?["device"] as Int64? == Int64(bitPattern: UInt64(st.st_dev)))
        #expect(row?["inode"] as Int64? == Int64(bitPattern: UInt64(st.st_ino)))
        #expect(row?["commit_no"] as Int64? == report.commit)
    }

    @Test("an object's edges go both ways, out in (name, kind, destination) order, in by (rules, id), ends named")
    func edgesBothWays() throws {
        let f = try Fixture()
        let path = try f.makeFile("e/held.bin")
        let a = ref("n", "a"), b = ref("n", "b"), c = ref("n", "c"), d = ref("n", "d"), e = ref("n", "e")
        try f.put([(a, [:]), (b, [:]), (c, [:]), (d, [:]), (e, [:])])
        try f.addEdge("z", a, .object(b), .deleteDestinationIfSourceDeleted)
        try f.addEdge("self", a, .object(a), [])
        try f.addEdge("m", a, .file(path), .deleteDestinationIfAllSourcesDeleted)
        try f.addEdge("m", a, .object(c), [])
        try f.addEdge("in2", e, .object(a), .deleteSourceIfDestinationDeleted)
        try f.addEdge("in1", d, .object(a), .notifyIfDestinationDeleted)
        try f.addEdge("in0", c, .object(a), .notifyIfDestinationDeleted)

        let r = try f.delete(a)
        #expect(r.deleted.map(\.ref) == [a, b, e])
        #expect(r.deleted.map(\.cause) == [.request, .cascade, .cascade])
        let removed = r.edgesRemoved.map { "\($0.edge.name) \($0.edge.source) > \($0.edge.destination) \($0.reason)" }
        #expect(
            removed == [
                "m n/a > n/c sourceDeleted", "m n/a > \(path) sourceDeleted", "self n/a > n/a sourceDeleted",
                "z n/a > n/b sourceDeleted", "in1 n/d > n/a destinationDeleted", "in0 n/c > n/a destinationDeleted",
                "in2 n/e > n/a destinationDeleted",
            ])
        #expect(r.filesQueued == [path])
        #expect(r.notifications.map(\.node) == [d, c])
        #expect(try rowCount(f, "edge") == 0 && rowCount(f, "file") == 0)
        #expect(try f.exists(c) && f.exists(d) && !f.exists(b) && !f.exists(e))
    }

    @Test("a file a rule deletes takes every other edge to it; an edge from a missing row goes unreported")
    func fileTakesEveryEdge() throws {
        let f = try Fixture()
        let path = try f.makeFile("f/owned.bin")
        let x = ref("n", "x"), y = ref("n", "y"), a = ref("n", "a")
        try f.put([(x, [:]), (y, [:]), (a, [:])])
        try f.addEdge("owns", x, .file(path), .deleteDestinationIfSourceDeleted)
        try f.addEdge("sees", y, .file(path), [])
        // Rows no call makes: edges from an object id that does not exist, to the file and to a.
        try f.store.pool.write { db in
            try db.execute(
                sql: """
                    INSERT INTO edge (name, src, is_file, dst, rules, field)
                    SELECT 'ghost', 999999, 1, id, 0, NULL FROM file
                    UNION ALL SELECT 'ghost', 999999, 0, id, 0, NULL FROM object WHERE key = 'a'
                    """)
        }
        #expect(try rowCount(f, "edge") == 4)
        let r = try f.delete(x, a)
        #expect(r.filesQueued == [path])
        #expect(
            r.edgesRemoved.map { "\($0.edge.name) \($0.edge.source) \($0.reason)" } == [
                "owns n/x sourceDeleted", "sees n/y destinationDeleted",
            ])
        #expect(try rowCount(f, "edge") == 0 && rowCount(f, "file") == 0)
        #expect(try f.exists(y))
    }

    @Test("removed edges name a file by its path, shared, kept or gone, where file and object ids meet")
    func removedEdgesNameEachKind() throws {
        let f = try Fixture()
        let gone = try f.makeFile("s/gone.bin"), kept = try f.makeFile("s/kept.bin")
        let a = ref("n", "a"), b = ref("n", "b"), c = ref("n", "c"), d = ref("n", "d")
        try f.put([(a, [:]), (b, [:]), (c, [:]), (d, [:])])
        // a and b share both files; d keeps `kept`, so only `gone` goes with a and b.
        for s in [a, b] {
            try f.addEdge("f", s, .file(gone), .deleteDestinationIfAllSourcesDeleted)
            try f.addEdge("k", s, .file(kept), .deleteDestinationIfAllSourcesDeleted)
        }
        try f.addEdge("k", d, .file(kept), .deleteDestinationIfAllSourcesDeleted)
        try f.addEdge("o", a, .object(c), [])
        // Each file's id is also an object's, so a join keyed on the wrong kind finds a row
        // of the other table and the removed edges name the wrong thing.
        #expect(
            try f.store.read { r in try Int.fetchOne(r.db, sql: "SELECT COUNT(*) FROM file JOIN object USING (id)") }
                == 2)

        let r = try f.delete(a, b)
        #expect(
            r.edgesRemoved.map { "\($0.edge.name) \($0.edge.source) > \($0.edge.destination) \($0.reason)" } == [
                "f n/a > \(gone) sourceDeleted", "k n/a > \(kept) sourceDeleted", "o n/a > n/c sourceDeleted",
                "f n/b > \(gone) sourceDeleted", "k n/b > \(kept) sourceDeleted",
            ])
        #expect(r.filesQueued == [gone])
        #expect(try rowCount(f, "file") == 1 && rowCount(f, "edge") == 1)
        let listed = try f.store.read { t in try t.edges(EdgeFilter(source: d)) }
        #expect(listed.map { "\($0.name) \($0.source) > \($0.destination)" } == ["k n/d > \(kept)"])
    }

    private func rowCount(_ f: Fixture, _ table: String) throws -> Int {
        try f.store.read { r in try Int.fetchOne(r.db, sql: "SELECT COUNT(*) FROM \(table)") ?? -1 }
    }
}
