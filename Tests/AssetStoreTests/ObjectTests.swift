// Objects (assetd(8), DATA MODEL, Objects): identity limits, value and metadata, owner,
// timestamps, paging.

import Testing
import AssetStore
import AssetStoreTestSupport

@Suite struct ObjectTests {
    @Test("put and get keep value, metadata, owner and timestamps")
    func putGet() throws {
        let f = try Fixture()
        try f.store.write { tx in
            try tx.put(ref("c", "k"), value: ["a": [1, 2.5, "x", true, nil]], metadata: ["m": 1], owner: "bob")
        }
        let o = try #require(try f.store.read { try $0.get(ref("c", "k")) })
        #expect(o.value == ["a": [1, 2.5, "x", true, nil]])
        #expect(o.metadata == ["m": 1])
        #expect(o.owner == "bob")
        #expect(o.created == f.clock.now && o.modified == f.clock.now && o.accessed == f.clock.now)
        #expect(try f.store.read { try $0.get(ref("c", "missing")) } == nil)
    }

    @Test("a value with escapes and text beyond ASCII is stored as written, by an insert and by an update")
    func valueTextRoundTrips() throws {
        let f = try Fixture()
        let values: [JSONValue] = [
            ["s": "é\u{0}\"\\\n😀", "k": ["ü": [1, -2, 2.5]]], [:], "", ["": nil],
        ]
        for (i, value) in values.enumerated() {
            try f.store.write { tx in try tx.put(ref("c", "k\(i)"), value: value) }
            #expect(try f.store.read { try $0.get(ref("c", "k\(i)")) }?.value == value)
            // The update path binds the same text through another statement.
            try f.store.write { tx in try tx.put(ref("c", "k\(i)"), value: ["was": value]) }
            #expect(try f.store.read { try $0.get(ref("c", "k\(i)")) }?.value == ["was": value])
        }
    }

    @Test("a new object put without metadata has none, after one put with it (in the same transaction and the next)")
    func metadataNotCarriedOver() throws {
        let f = try Fixture()
        try f.store.write { tx in
            try tx.put(ref("c", "with"), value: 1, metadata: ["m": 1])
            try tx.put(ref("c", "without"), value: 2)
        }
        try f.store.write { tx in try tx.put(ref("c", "with2"), value: 3, metadata: ["m": 2]) }
        try f.store.write { tx in try tx.put(ref("c", "without2"), value: 4) }
        for (key, metadata) in [("with", ["m": 1]), ("without", nil), ("with2", ["m": 2]), ("without2", nil)]
            as [(String, JSONValue?)]
        {
            let o = try #require(try f.store.read { try $0.get(ref("c", key)) })
            #expect(o.metadata == metadata, "\(key)")
        }
    }

    @Test("a put of an existing key replaces that object in place: one row, created kept, modified moved")
    func putExistingUpdates() throws {
        let f = try Fixture()
        try f.put([(ref("c", "k"), ["v": 1])], owner: "bob")
        let created = f.clock.now
        f.clock.advance(5)
        // Twice in one transaction, and with another new key beside it.
        try f.store.write { tx in
            try tx.put(ref("c", "k"), value: ["v": 2], metadata: ["m": true])
            try tx.put(ref("c", "new"), value: 3)
            try tx.put(ref("c", "k"), value: ["v": 4], owner: "carol")
        }
        let o = try #require(try f.store.read { try $0.get(ref("c", "k")) })
        #expect(o.value == ["v": 4])
        #expect(o.metadata == nil)
        #expect(o.owner == "carol")
        #expect(o.created == created && o.modified == created + 5)
        #expect(try f.store.read { try $0.objectCount() } == 2)
        #expect(try f.store.read { try $0.get(ref("c", "new"))?.value } == 3)
    }

    @Test("the owner is the value's owner string, else the argument, else the writer's default")
    func ownerPrecedence() throws {
        let f = try Fixture()
        try f.store.write(owner: "client") { tx in
            try tx.put(ref("c", "1"), value: ["owner": "alice"], owner: "bob")
            try tx.put(ref("c", "2"), value: ["owner": 7], owner: "bob")
            try tx.put(ref("c", "3"), value: [:])
        }
        let owners = try f.store.read { r in try ["1", "2", "3"].map { try r.get(ref("c", $0))?.owner } }
        #expect(owners == ["alice", "bob", "client"])
    }

    @Test("touch moves accessed only; deleting a missing object is not_found")
    func touchAndMissing() throws {
        let f = try Fixture()
        try f.put([(ref("c", "k"), 1)])
        f.clock.advance(10)
        try f.store.write { try $0.touch(ref("c", "k")) }
        let o = try #require(try f.store.read { try $0.get(ref("c", "k")) })
        #expect(o.accessed == o.created + 10)
        #expect(o.modified == o.created)
        #expect(expectCode(.notFound) { try f.delete(ref("c", "nope")) } != nil)
        #expect(expectCode(.notFound) { try f.store.write { try $0.touch(ref("c", "nope")) } } != nil)
    }

    @Test(
        "collection and key must be non-empty and at most 1,024 bytes",
        arguments: [
            ("", "k"), ("c", ""), (String(repeating: "é", count: 513), "k"), ("c", String(repeating: "x", count: 1025)),
        ])
    func identityLimits(collection: String, key: String) throws {
        let f = try Fixture()
        #expect(expectCode(.invalidParams) { try f.put([(ObjectRef(collection, key), 1)]) } != nil)
        #expect(expectCode(.invalidParams) { try f.store.read { try $0.get(ObjectRef(collection, key)) } } != nil)
    }

    @Test("a key of exactly 1,024 bytes is accepted")
    func longestKey() throws {
        let f = try Fixture()
        let k = ObjectRef("c", String(repeating: "k", count: 1024))
        try f.put([(k, 1)])
        #expect(try f.exists(k))
    }

    @Test("list pages through a collection in key order")
    func listPages() throws {
        let f = try Fixture()
        try f.put(
            (0..<25).map { (ref("c", String(format: "k%02d", $0)), JSONValue.int(Int64($0))) } + [(ref("d", "x"), 1)])
        var all = [String]()
        var after: String?
        repeat {
            let page = try f.store.read { try $0.list(collection: "c", after: after, limit: 10) }
            all += page.keys
            after = page.next
        } while after != nil
        #expect(all == (0..<25).map { String(format: "k%02d", $0) })
        #expect(try f.store.read { try $0.list(collection: "c", limit: 25) }.next == nil)
    }

    @Test("a write transaction's own reads do not see what it deleted")
    func writeViewHidesDeleted() throws {
        let f = try Fixture()
        try f.put([(ref("c", "a"), 1), (ref("c", "b"), 1)])
        try f.store.write { tx in
            try tx.delete(ref("c", "a"))
            #expect(try tx.list(collection: "c").keys == ["b"])
            #expect(try !tx.exists(ref("c", "a")))
            #expect(expectCode(.notFound) { try tx.delete(ref("c", "a")) } != nil)
        }
    }

    @Test("inside a write transaction, file() does not list edges of objects the transaction deleted")
    func fileReportHidesDeletedSources() throws {
        let f = try Fixture()
        let path = try f.makeFile("seen")
        let a = ref("m", "a"), b = ref("m", "b")
        try f.put([(a, ["file": .string(path)]), (b, ["file": .string(path)])])
        try f.store.write { tx in
            try tx.delete(a)
            #expect(try tx.edges(EdgeFilter(destination: .file(path))).map(\.source) == [b])
            #expect(try tx.file(path)?.edges.map(\.source) == [b])
        }
    }

    @Test("list with a huge limit does not crash")
    func listHugeLimit() async {
        // No input crashes the daemon: `limit + 1 + hidden.count` overflowed.
        let f = try! Fixture()
        try! f.put([(ref("n", "a"), 1)])
        #expect(expectCode(.invalidParams) { try f.store.read { try $0.list(collection: "n", limit: Int.max) } } != nil)
        #expect(try! f.store.read { try $0.list(collection: "n", limit: 100_000) }.keys == ["a"])
    }
}
