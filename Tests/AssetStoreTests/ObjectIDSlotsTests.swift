// A PointReader reads an object by the row id it last found for its ref, and the ids only
// say where to look: after puts, deletes, a cascade, an expiry, a delete and a new put of
// the same ref, and touches, every read equals the store's own read, with slots shared by
// every ref (one slot) and by none (the default count).

import Testing
@testable import AssetStore
import AssetStoreTestSupport

@Suite struct ObjectIDSlotsTests {
    /// Refs with escapes, non-ASCII bytes, a split that only the lengths tell apart, and one
    /// too long for a slot.
    static let refs = [
        ref("c", "plain"), ref("ab", "c"), ref("a", "bc"), ref("ü nicode \"q\"", "k\n\t\\"),
        ref("c", String(repeating: "long", count: 20)), ref("parent", "p"), ref("child", "x"),
    ]

    @Test(
        "a reader's reads equal the store's through puts, deletes, a cascade, an expiry, re-puts and touches",
        arguments: [1, 2, PointReader.idSlots])
    func readsFollowEveryChange(slots: Int) throws {
        let f = try Fixture()
        let reader = try PointReader(store: f.store, idSlots: slots)
        func check(_ step: String) throws {
            for r in Self.refs {
                #expect(try reader.objectJSON(r) == f.store.objectJSON(r), "\(step): \(r)")
                // Twice: the second read goes by the id the first one found.
                #expect(try reader.objectJSON(r) == f.store.objectJSON(r), "\(step), again: \(r)")
            }
        }
        try check("empty")
        try f.put(Self.refs.enumerated().map { ($1, .int(Int64($0))) })
        try check("put")
        try f.put([(ref("ab", "c"), "changed"), (ref("c", "plain"), ["n": 2])])
        try check("changed")
        // The same ref again, unread in between: a new object with a new id, the old id
        // reading no row.
        try f.delete(ref("ab", "c"))
        try f.put([(ref("ab", "c"), "again")])
        try check("deleted and put again")
        try f.delete(ref("c", "plain"))
        try check("deleted")
        try f.store.write { tx in
            try tx.addEdge(
                name: "owns", source: ref("parent", "p"), destination: .object(ref("child", "x")),
                rules: .deleteDestinationIfSourceDeleted)
        }
        try check("edge")
        try f.delete(ref("parent", "p"))
        try check("cascade")
        try f.put([(ref("child", "x"), "back"), (ref("c", "plain"), "back")])
        try check("back")
        // A touch not yet written shows in both reads, by id or by the index.
        f.clock.advance(5)
        _ = try reader.objectJSON(ref("a", "bc"), touching: .yes)
        try f.store.touch(ref("ü nicode \"q\"", "k\n\t\\"), check: nil)
        try check("touched")
        _ = try f.store.flushAccesses()
        try check("flushed")
        // An expiry deletes by its own batches, not through `delete`.
        f.clock.advance(7200)
        _ = try f.store.expire(collection: nil, olderThan: 3600, idle: nil)
        try check("expired")
        #expect(try reader.objectJSON(ref("a", "bc")) == nil)
        try f.put(Self.refs.map { ($0, "last") })
        try check("all back")
    }

    @Test("slots keep exact bytes: a split of the same bytes, a longer ref or a replaced slot is not found")
    func slotsMatchExactly() throws {
        let slots = ObjectIDSlots(count: 1)
        func id(_ c: String, _ k: String) -> Int64? {
            var (c, k) = (c, k)
            return c.withUTF8 { c in k.withUTF8 { k in slots.id(c, k) } }
        }
        func set(_ c: String, _ k: String, _ i: Int64) {
            var (c, k) = (c, k)
            c.withUTF8 { c in k.withUTF8 { k in slots.set(c, k, i) } }
        }
        #expect(id("ab", "c") == nil)
        set("ab", "c", 7)
        #expect(id("ab", "c") == 7)
        #expect(id("a", "bc") == nil, "the same bytes split otherwise")
        #expect(id("ab", "c ") == nil)
        #expect(id("Ab", "c") == nil)
        set("a", "bc", 8)  // the one slot now holds the other ref
        #expect(id("ab", "c") == nil)
        #expect(id("a", "bc") == 8)
        // "c" and this key fill a slot exactly.
        let fits = String(repeating: "é", count: 26) + "x"
        #expect(1 + fits.utf8.count == ObjectIDSlots.refBytes)
        set("c", fits, 9)
        #expect(id("c", fits) == 9)
        set("c", fits + "x", 10)  // one byte over: not kept, the slot keeps what it had
        #expect(id("c", fits + "x") == nil)
        #expect(id("c", fits) == 9)
        var (c, k) = ("c", fits)
        c.withUTF8 { c in k.withUTF8 { k in slots.remove(c, k) } }
        #expect(id("c", fits) == nil)
    }
}
