// The built-in index `default` (assetd(8), DATA MODEL, Secondary indexes and Objects): owner
// precedence, size and files from the file registry (distinct files, missing ones count 0),
// timestamps, and rows that follow puts, touches, deletes and file edges that go.

import Foundation
import Testing
import AssetStore
import AssetStoreTestSupport

@Suite struct DefaultIndexTests {
    /// The default row of one object, or nil when it has none.
    func row(_ f: Fixture, _ r: ObjectRef) throws -> [String: JSONValue]? {
        try indexContents(f.store)[r]
    }

    @Test("owner comes from the value's owner field, else the put argument, else the store's default owner")
    func ownerPrecedence() throws {
        let f = try Fixture { $0.defaultOwner = "daemon" }
        try f.store.write { tx in
            try tx.put(ref("m", "field"), value: ["owner": "alice"], owner: "bob")
            try tx.put(ref("m", "argument"), value: ["x": 1], owner: "bob")
            try tx.put(ref("m", "default"), value: ["x": 1])
            try tx.put(ref("m", "not-a-string"), value: ["owner": 42], owner: "bob")
            try tx.put(ref("m", "nested"), value: ["meta": ["owner": "alice"]])
        }
        #expect(try row(f, ref("m", "field"))?["owner"] == "alice")
        #expect(try row(f, ref("m", "argument"))?["owner"] == "bob")
        #expect(try row(f, ref("m", "default"))?["owner"] == "daemon")
        #expect(try row(f, ref("m", "not-a-string"))?["owner"] == "bob")
        #expect(try row(f, ref("m", "nested"))?["owner"] == "daemon")
    }

    @Test("an object new in a transaction holds its files in the index however it got them there")
    func newObjectsFilesCounted() throws {
        let f = try Fixture()
        let a = try f.makeFile("a.bin", size: 100)
        let b = try f.makeFile("b.bin", size: 20)
        try f.store.write { tx in
            try tx.put(ref("m", "derived"), value: ["file": .string(a)])
            try tx.put(ref("m", "manual"), value: ["x": 1])
            try tx.addEdge(name: "keeps", source: ref("m", "manual"), destination: .file(b), rules: [])
            try tx.put(ref("m", "before"), value: ["x": 1])
            _ = try? tx.attempt {
                try tx.addEdge(name: "keeps", source: ref("m", "before"), destination: .file(b), rules: [])
                throw StoreError(.invalidParams, "rolled back")
            }
            try tx.addEdge(name: "keeps", source: ref("m", "pending"), destination: .file(a), rules: [])
            try tx.put(ref("m", "pending"), value: ["x": 1])
            try tx.put(ref("m", "none"), value: ["x": 1])
        }
        #expect(try row(f, ref("m", "derived"))?["size"] == 100)
        #expect(try row(f, ref("m", "manual"))?["size"] == 20)
        #expect(try row(f, ref("m", "manual"))?["files"] == 1)
        #expect(try row(f, ref("m", "before"))?["files"] == 0)
        #expect(try row(f, ref("m", "pending"))?["size"] == 100)
        #expect(try row(f, ref("m", "none"))?["files"] == 0)
        try expectIndexTruth(
            f.store, universe: ["derived", "manual", "before", "pending", "none"].map { ref("m", $0) },
            "after the transaction")
    }

    @Test("a write transaction's owner is the default for puts without one")
    func writeOwnerIsTheDefault() throws {
        let f = try Fixture { $0.defaultOwner = "daemon" }
        try f.store.write(owner: "client") { tx in
            try tx.put(ref("m", "a"), value: ["x": 1])
            try tx.put(ref("m", "b"), value: ["x": 1], owner: "explicit")
        }
        #expect(try row(f, ref("m", "a"))?["owner"] == "client")
        #expect(try row(f, ref("m", "b"))?["owner"] == "explicit")
    }

    @Test("a later put that drops the owner field falls back to the put argument")
    func ownerFollowsRePut() throws {
        let f = try Fixture { $0.defaultOwner = "daemon" }
        try put(f, ref("m", "a"), ["owner": "alice"])
        #expect(try row(f, ref("m", "a"))?["owner"] == "alice")
        try put(f, ref("m", "a"), ["x": 1], owner: "carol")
        #expect(try row(f, ref("m", "a"))?["owner"] == "carol")
        try put(f, ref("m", "a"), ["x": 2])
        #expect(try row(f, ref("m", "a"))?["owner"] == "daemon")
    }

    @Test("size is the total of the object's distinct files and files counts them")
    func sizeSumsFiles() throws {
        let f = try Fixture()
        let a = try f.makeFile("a.bin", size: 100)
        let b = try f.makeFile("b.bin", size: 23)
        try put(f, ref("m", "two"), ["file": [.string(a), .string(b)]])
        try put(f, ref("m", "one"), ["file": .string(b)])
        try put(f, ref("m", "none"), ["x": 1])
        let rows = try indexContents(f.store)
        #expect(rows[ref("m", "two")]?["size"] == 123)
        #expect(rows[ref("m", "two")]?["files"] == 2)
        #expect(rows[ref("m", "one")]?["size"] == 23)
        #expect(rows[ref("m", "one")]?["files"] == 1)
        #expect(rows[ref("m", "none")]?["size"] == 0)
        #expect(rows[ref("m", "none")]?["files"] == 0)
    }

    @Test("two objects sharing one file each count it once, and the same file twice counts once")
    func sharedFileCountsForEachHolder() throws {
        let f = try Fixture()
        let shared = try f.makeFile("shared.bin", size: 50)
        let other = try f.makeFile("other.bin", size: 7)
        try put(f, ref("m", "x"), ["file": .string(shared)])
        try put(f, ref("m", "y"), ["file": [.string(shared), .string(other)]])
        // The same path twice, once in a non-normal spelling: still one file.
        try put(f, ref("m", "twice"), ["file": [.string(shared), .string(f.root + "//./shared.bin")]])
        // A manual edge to a file the object already holds through its value.
        try f.store.write { tx in
            try tx.addEdge(name: "extra", source: ref("m", "x"), destination: .file(shared), rules: [])
        }
        let rows = try indexContents(f.store)
        #expect(rows[ref("m", "x")]?["size"] == 50)
        #expect(rows[ref("m", "x")]?["files"] == 1)
        #expect(rows[ref("m", "y")]?["size"] == 57)
        #expect(rows[ref("m", "y")]?["files"] == 2)
        #expect(rows[ref("m", "twice")]?["size"] == 50)
        #expect(rows[ref("m", "twice")]?["files"] == 1)
        let total = try f.store.aggregate(function: "SUM(size)")
        #expect(total == .value(.int(157)))
    }

    @Test("a manual file edge adds the file to size, and removing it takes it away")
    func manualFileEdge() throws {
        let f = try Fixture()
        let p = try f.makeFile("manual.bin", size: 64)
        try put(f, ref("m", "a"), ["x": 1])
        try f.store.write { tx in
            try tx.addEdge(name: "cache", source: ref("m", "a"), destination: .file(p), rules: [])
        }
        #expect(try row(f, ref("m", "a"))?["size"] == 64)
        #expect(try row(f, ref("m", "a"))?["files"] == 1)
        let removed = try f.store.write { tx in
            try tx.removeEdge(name: "cache", source: ref("m", "a"), destination: .file(p))
        }.value
        #expect(removed)
        #expect(try row(f, ref("m", "a"))?["size"] == 0)
        #expect(try row(f, ref("m", "a"))?["files"] == 0)
    }

    @Test("a file that does not exist yet counts 0 bytes, and its size shows once a touch sees it")
    func missingFileCountsZero() throws {
        let f = try Fixture()
        let later = f.root + "/later.bin"
        let now = try f.makeFile("now.bin", size: 9)
        try put(f, ref("m", "a"), ["file": [.string(later), .string(now)]])
        #expect(try row(f, ref("m", "a"))?["size"] == 9)
        #expect(try row(f, ref("m", "a"))?["files"] == 2)
        try f.makeFile("later.bin", size: 1000)
        try f.store.write { tx in try tx.touch(ref("m", "a")) }
        #expect(try row(f, ref("m", "a"))?["size"] == 1009)
    }

    @Test("a file removed from disk counts 0 bytes once a touch sees it gone, and still counts as a file")
    func removedFileCountsZero() throws {
        let f = try Fixture()
        let p = try f.makeFile("vanishes.bin", size: 500)
        try put(f, ref("m", "a"), ["file": .string(p)])
        #expect(try row(f, ref("m", "a"))?["size"] == 500)
        try FileManager.default.removeItem(atPath: p)
        try f.store.write { tx in try tx.touch(ref("m", "a")) }
        #expect(try row(f, ref("m", "a"))?["size"] == 0)
        #expect(try row(f, ref("m", "a"))?["files"] == 1)
    }

    @Test("a re-put of one holder refreshes the file's size in every holder's row")
    func sizeChangeReachesOtherHolders() throws {
        let f = try Fixture()
        let p = try f.makeFile("grows.bin", size: 10)
        try put(f, ref("m", "a"), ["file": .string(p)])
        try put(f, ref("m", "b"), ["file": .string(p)])
        try f.makeFile("grows.bin", size: 300)
        try put(f, ref("m", "a"), ["file": .string(p), "v": 2])
        let rows = try indexContents(f.store)
        #expect(rows[ref("m", "a")]?["size"] == 300)
        #expect(rows[ref("m", "b")]?["size"] == 300)
    }

    @Test("created stays, modified and accessed follow puts, and touch moves only accessed")
    func timestamps() throws {
        let f = try Fixture()
        let t0 = f.clock.now
        try put(f, ref("m", "a"), ["v": 1])
        var r = try #require(try row(f, ref("m", "a")))
        #expect(r["created"] == .double(t0))
        #expect(r["modified"] == .double(t0))
        #expect(r["accessed"] == .double(t0))

        f.clock.advance(10.5)
        try f.store.write { tx in try tx.touch(ref("m", "a")) }
        r = try #require(try row(f, ref("m", "a")))
        #expect(r["created"] == .double(t0))
        #expect(r["modified"] == .double(t0))
        #expect(r["accessed"] == .double(t0 + 10.5))

        f.clock.advance(5)
        try put(f, ref("m", "a"), ["v": 2])
        r = try #require(try row(f, ref("m", "a")))
        #expect(r["created"] == .double(t0))
        #expect(r["modified"] == .double(t0 + 15.5))
        #expect(r["accessed"] == .double(t0 + 15.5))
    }

    @Test("deleting an object removes its row")
    func deleteRemovesRow() throws {
        let f = try Fixture()
        let p = try f.makeFile("gone.bin", size: 5)
        try put(f, ref("m", "a"), ["file": .string(p)])
        try put(f, ref("m", "b"), ["v": 1])
        try f.delete(ref("m", "a"))
        let rows = try indexContents(f.store)
        #expect(rows[ref("m", "a")] == nil)
        #expect(rows.count == 1)
        #expect(try f.store.query(clause: "WHERE key = ?", parameters: ["a"]).isEmpty)
    }

    @Test("an object put and deleted in one transaction leaves no row")
    func putThenDeleteInOneTransaction() throws {
        let f = try Fixture()
        try f.store.write { tx in
            try tx.put(ref("m", "a"), value: ["v": 1])
            try tx.delete(ref("m", "a"))
        }
        #expect(try indexContents(f.store).isEmpty)
    }

    @Test("a re-put without the file field drops the file edge and size falls to 0")
    func dropFileEdge() throws {
        let f = try Fixture()
        let p = try f.makeFile("dropped.bin", size: 77)
        try put(f, ref("m", "a"), ["file": .string(p)])
        #expect(try row(f, ref("m", "a"))?["size"] == 77)
        try put(f, ref("m", "a"), ["nothing": true])
        #expect(try row(f, ref("m", "a"))?["size"] == 0)
        #expect(try row(f, ref("m", "a"))?["files"] == 0)
    }

    @Test("when a rule deletes a shared file, the surviving holder's size drops")
    func fileDeletedByAnotherEdge() throws {
        let f = try Fixture()
        let p = try f.makeFile("doomed.bin", size: 40)
        try put(f, ref("m", "keeper"), ["file": .string(p)])
        try put(f, ref("m", "killer"), ["v": 1])
        try f.store.write { tx in
            try tx.addEdge(
                name: "owns", source: ref("m", "killer"), destination: .file(p),
                rules: .deleteDestinationIfSourceDeleted)
        }
        #expect(try row(f, ref("m", "keeper"))?["size"] == 40)
        try f.delete(ref("m", "killer"))
        let keeper = try #require(try row(f, ref("m", "keeper")))
        #expect(keeper["size"] == 0)
        #expect(keeper["files"] == 0)
    }

    @Test("rebuilding the default index reproduces the same rows")
    func rebuildDefault() throws {
        let f = try Fixture()
        let p = try f.makeFile("r.bin", size: 12)
        try put(f, ref("m", "a"), ["file": .string(p), "owner": "alice"])
        try put(f, ref("n", "b"), ["v": 1], owner: "bob")
        let before = try indexContents(f.store)
        let log = ProgressLog()
        try f.store.write { tx in try tx.rebuildIndex(IndexDefinition.defaultName, progress: log.callback) }
        #expect(try indexContents(f.store) == before)
        #expect(log.all.last?.total == 2)
        #expect(expectCode(.notFound) { try f.store.write { tx in try tx.rebuildIndex("nope") } } != nil)
    }

    @Test("a failed transaction leaves no index row behind")
    func rollbackLeavesNoRow() throws {
        let f = try Fixture()
        let err = expectCode(.danglingEdge) {
            try f.store.write { tx in
                try tx.put(ref("m", "a"), value: ["v": 1])
                try tx.addEdge(name: "to", source: ref("m", "a"), destination: .object(ref("m", "ghost")), rules: [])
            }
        }
        #expect(err != nil)
        #expect(try indexContents(f.store).isEmpty)
    }

    // A new object's index rows are written without deleting first; these are the ways a
    // row can exist before the transaction's final refresh (a duplicate would fail the commit).
    @Test("a new object put again after a flush, or after its index was rebuilt, keeps one row per index, the last")
    func newObjectRowsWrittenOnce() throws {
        let kinds = IndexDefinition(name: "kinds", version: "1", columns: [column("kind", .text, "kind")])
        let f = try Fixture { $0.indexes = [kinds] }
        // Each case in its own transaction: a rebuild in one would hide a slip in another.
        try f.store.write { tx in
            try tx.put(ref("n", "flushed"), value: ["kind": "a"], owner: "first")
            try tx.flush()
            try tx.put(ref("n", "flushed"), value: ["kind": "b"], owner: "second")
        }
        try f.store.write { tx in
            try tx.put(ref("n", "rebuilt"), value: ["kind": "a"], owner: "first")
            try tx.rebuildIndex("default")
            try tx.rebuildIndex("kinds")
            try tx.put(ref("n", "rebuilt"), value: ["kind": "b"], owner: "second")
        }
        try f.store.write { tx in
            try tx.put(ref("n", "defined"), value: ["kind": "a", "tag": "x"], owner: "first")
            try tx.defineIndex(IndexDefinition(name: "tags", version: "1", columns: [column("tag", .text, "tag")]))
            try tx.put(ref("n", "defined"), value: ["kind": "b", "tag": "y"], owner: "second")
        }
        let rows = try indexContents(f.store)  // records an issue for a repeated row
        let kindRows = try indexContents(f.store, index: "kinds")
        for key in ["flushed", "rebuilt", "defined"] {
            #expect(rows[ref("n", key)]?["owner"] == "second", "\(key)")
            #expect(kindRows[ref("n", key)]?["kind"] == "b", "\(key)")
        }
        #expect(try indexContents(f.store, index: "tags")[ref("n", "defined")]?["tag"] == "y")
    }
}
