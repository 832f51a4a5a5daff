// Transactions as a whole (processing at commit, assetd(8), DATA MODEL, Edges and delete rules;
// transact in Methods): all or nothing, deny and dangling edges fail everything, delete-then-put is
// an update unless a flush ran between, commit numbers, and ids that are never reused.

import GRDB
import Testing
import AssetStore
import AssetStoreTestSupport

struct Boom: Error {}

@Suite struct TransactionTests {
    /// Everything a failed transaction could have left behind.
    func snapshot(_ f: Fixture) throws -> [String] {
        var config = Configuration()
        config.readonly = true
        let q = try DatabaseQueue(path: f.dbPath, configuration: config)
        defer { try? q.close() }
        return try q.read { db in
            try ["object", "edge", "file", "unlink_queue", "index_default", "meta"].map { t in
                let rows = try Row.fetchAll(db, sql: "SELECT * FROM \(t) ORDER BY 1")
                return "\(t): \(rows.map { $0.description })"
            }
        }
    }

    func populated() throws -> (Fixture, String) {
        let f = try Fixture()
        let path = try f.makeFile("p/file")
        try f.put([(ref("m", "a"), ["file": .string(path)]), (ref("m", "b"), [:]), (ref("m", "c"), [:])])
        try f.addEdge("down", ref("m", "a"), .object(ref("m", "b")), .deleteDestinationIfSourceDeleted)
        return (f, path)
    }

    @Test("a transaction whose body throws leaves no trace: no object, edge, index row or queued unlink")
    func bodyThrows() throws {
        let (f, path) = try populated()
        let before = try snapshot(f)
        #expect(throws: Boom.self) {
            try f.store.write { tx in
                try tx.put(ref("m", "new"), value: ["file": .string(path)])
                try tx.delete(ref("m", "a"))
                try tx.flush()
                throw Boom()
            }
        }
        #expect(try snapshot(f) == before)
        _ = try f.store.sweep()
        #expect(f.exists(path))
    }

    @Test("a denied delete rolls back everything the transaction did, cascades included")
    func denyRollsBackAll() throws {
        let (f, path) = try populated()
        try f.addEdge("guard", ref("m", "c"), .object(ref("m", "b")), .denyDeleteDestination)
        let before = try snapshot(f)
        let e = expectCode(.deleteDenied) {
            try f.store.write { tx in
                try tx.put(ref("m", "new"), value: [:])
                try tx.delete(ref("m", "a"))  // cascades to b, which c's deny edge protects
            }
        }
        #expect(e != nil)
        #expect(e?.message.contains("m/b") == true)
        #expect(try snapshot(f) == before)
        _ = try f.store.sweep()
        #expect(f.exists(path))
        // Deleting the guard in the same transaction makes it legal.
        let r = try f.delete(ref("m", "a"), ref("m", "c"))
        #expect(Set(r.deletedRefs) == [ref("m", "a"), ref("m", "b"), ref("m", "c")])
    }

    @Test("denyDeleteSource protects the source while its destination survives")
    func denySource() throws {
        let f = try Fixture()
        let s = ref("n", "s"), d = ref("n", "d")
        try f.put([(s, [:]), (d, [:])])
        try f.addEdge("pin", s, .object(d), .denyDeleteSource)
        #expect(expectCode(.deleteDenied) { try f.delete(s) } != nil)
        try f.delete(d)  // the destination may go; the edge goes with it
        try f.delete(s)
        #expect(try !f.exists(s))
    }

    @Test("a dangling edge fails the commit and no rule fires")
    func danglingFailsCommit() throws {
        let (f, path) = try populated()
        let before = try snapshot(f)
        let e = expectCode(.danglingEdge) {
            try f.store.write { tx in
                try tx.delete(ref("m", "a"))
                try tx.addEdge(
                    name: "x", source: ref("m", "c"), destination: .object(ref("m", "ghost")),
                    rules: .deleteSourceIfDestinationDeleted)
            }
        }
        #expect(e?.detail?["destination"] == ref("m", "ghost").json)
        #expect(try snapshot(f) == before)
        #expect(f.exists(path))
    }

    @Test("an edge may name objects created later in the same transaction")
    func edgeBeforeObjects() throws {
        let f = try Fixture()
        try f.store.write { tx in
            try tx.addEdge(
                name: "e", source: ref("n", "s"), destination: .object(ref("n", "d")),
                rules: .deleteDestinationIfSourceDeleted)
            try tx.put(ref("n", "s"), value: [:])
            try tx.put(ref("n", "d"), value: [:])
        }
        #expect(try f.count(EdgeFilter(name: "e")) == 1)
        try f.delete(ref("n", "s"))
        #expect(try !f.exists(ref("n", "d")))
    }

    @Test("delete then put of a key in one transaction is an update: manual edges stay, its file stays")
    func deleteThenPutIsUpdate() throws {
        let f = try Fixture()
        let path = try f.makeFile("keep")
        let o = ref("m", "o"), child = ref("m", "child")
        try f.put([(o, ["file": .string(path), "v": 1]), (child, [:])])
        try f.addEdge("kid", o, .object(child), .deleteDestinationIfSourceDeleted)
        let created = try #require(try f.store.read { try $0.get(o) }).created
        f.clock.advance(5)
        let r = try f.store.write { tx in
            try tx.delete(o)
            #expect(try tx.get(o) == nil)
            try tx.put(o, value: ["file": .string(path), "v": 2])
        }.report
        #expect(r.deleted.isEmpty)
        #expect(r.filesQueued.isEmpty)
        #expect(try f.exists(child))
        #expect(try f.count(EdgeFilter(name: "kid")) == 1)
        let after = try #require(try f.store.read { try $0.get(o) })
        #expect(after.value["v"] == 2)
        #expect(after.created == created)
        #expect(after.modified == created + 5)
    }

    @Test("with a flush between delete and put, the delete is processed: cascades run, the key is new")
    func flushBetweenDeleteAndPut() throws {
        let f = try Fixture()
        let path = try f.makeFile("held")
        let o = ref("m", "o"), child = ref("m", "child")
        try f.put([(o, ["file": .string(path)]), (child, [:])])
        try f.addEdge("kid", o, .object(child), .deleteDestinationIfSourceDeleted)
        let r = try f.store.write { tx in
            try tx.delete(o)
            try tx.flush()
            try tx.put(o, value: ["file": .string(path)])
        }.report
        #expect(r.deletedRefs == [o, child])
        // Queued by the flush, taken again by the put: the queue row is gone with the commit.
        #expect(r.filesQueued.isEmpty)
        #expect(try f.store.pending().isEmpty)
        _ = try f.store.sweep()
        #expect(f.exists(path))
        #expect(try f.count(EdgeFilter(name: "kid")) == 0)
    }

    @Test("every committed write transaction gets the next commit number; a failed one none")
    func commitNumbers() throws {
        let f = try Fixture()
        #expect(try f.put([(ref("n", "a"), 1)]).commit == 1)
        #expect(try f.put([(ref("n", "b"), 1)]).commit == 2)
        _ = try? f.store.write { _ in throw Boom() }
        #expect(try f.put([(ref("n", "c"), 1)]).commit == 3)
        #expect(try f.store.read { try $0.lastCommit() } == 3)
        try f.reopen()
        #expect(try f.put([(ref("n", "d"), 1)]).commit == 4)
    }

    /// The object ids in key order, read from the database file.
    func objectIDs(_ f: Fixture) throws -> [Int64] {
        var config = Configuration()
        config.readonly = true
        let q = try DatabaseQueue(path: f.dbPath, configuration: config)
        defer { try? q.close() }
        return try q.read { try Int64.fetchAll($0, sql: "SELECT id FROM object ORDER BY key") }
    }

    @Test("row ids are never reused: a key deleted and another created gets a fresh id")
    func idsNeverReused() throws {
        let f = try Fixture()
        try f.put([(ref("n", "a"), 1), (ref("n", "b"), 1)])
        try f.delete(ref("n", "b"))
        try f.reopen()
        try f.put([(ref("n", "c"), 1)])
        let ids = try objectIDs(f)
        #expect(ids == [1, 3])
    }

    @Test("a put of an existing key uses up no id: the next new object's id follows the last one")
    func updatesUseNoIds() throws {
        let f = try Fixture()
        try f.put([(ref("n", "a"), 1)])
        for v in 2...4 { try f.put([(ref("n", "a"), .int(Int64(v)))]) }
        try f.put([(ref("n", "b"), 1)])
        let ids = try objectIDs(f)
        #expect(ids == [1, 2])
    }

    @Test("a reader sees a snapshot while the writer works, and the commit afterwards")
    func readersAreIsolated() throws {
        let f = try Fixture()
        try f.put([(ref("n", "a"), 1)])
        try f.store.write { tx in
            try tx.put(ref("n", "a"), value: 2)
            try tx.put(ref("n", "b"), value: 2)
            #expect(try f.store.read { try $0.get(ref("n", "a"))?.value } == 1)
            #expect(try f.store.read { try $0.exists(ref("n", "b")) } == false)
        }
        #expect(try f.value(ref("n", "a")) == 2)
    }

    @Test("an explicit flush does not reject an edge to an object created later in the transaction")
    func flushBeforeDestinationExists() throws {
        let f = try Fixture()
        try f.setTemplate("t", templateEdge("parent", field: "parent", to: "p", .deleteSourceIfDestinationDeleted))
        // Edges may name objects created later in the same transaction; only at commit does an
        // edge whose source or destination does not exist fail.
        try f.store.write { tx in
            try tx.put(ref("t", "1"), value: ["parent": "x"])
            try tx.flush()
            try tx.put(ref("p", "x"), value: [:])
        }
        #expect(try f.count(EdgeFilter(name: "parent")) == 1)
    }

    @Test("a flush before an edge's destination exists leaves it pending; the commit derives every put object's edges")
    func flushErrorLosesEdges() throws {
        let f = try Fixture()
        let path = try f.makeFile("lost")
        try f.setTemplate("t", templateEdge("parent", field: "parent", to: "p", .deleteSourceIfDestinationDeleted))
        let a = ref("m", "a"), t = ref("t", "1")
        try f.store.write { tx in
            try tx.put(t, value: ["parent": "x"])
            try tx.put(a, value: ["file": .string(path)])
            try tx.flush()
            try tx.put(ref("p", "x"), value: [:])
        }
        // The commit went through, so the objects' values must match their edges (and index).
        #expect(try f.count(EdgeFilter(source: t)) == 1)
        #expect(try f.count(EdgeFilter(source: a)) == 1)
        #expect(try f.store.read { try $0.get(a) }?.files.map(\.path) == [path])
        // The file a's value names is not owned: deleting a leaks it.
        #expect(try f.delete(a).filesQueued == [path])
    }
}
