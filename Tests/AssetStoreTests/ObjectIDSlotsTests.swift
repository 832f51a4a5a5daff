// A PointReader reads an object by the row id it last found for its ref, and the ids only
// say where to look: after puts, deletes, a cascade, an expiry, a delete and a new put of
// the same ref, and touches, every read equals the store's own read, with slots shared by
// every ref (one slot) and by none (the default count).

import GRDB
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
        let old = reader.rememberedID(ref("ab", "c"))
        if slots == PointReader.idSlots {
            // The reads above went by id: the remembered id is the object's.
            #expect(old == (try Self.id(f, ref("ab", "c"))))
        }
        try f.delete(ref("ab", "c"))
        try f.put([(ref("ab", "c"), "again")])
        #expect(reader.rememberedID(ref("ab", "c")) == old, "nothing read since: the old id is still remembered")
        try check("deleted and put again")
        if slots == PointReader.idSlots {
            let new = try Self.id(f, ref("ab", "c"))
            #expect(new != old && reader.rememberedID(ref("ab", "c")) == new)
        }
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

    /// The object's id, as the store finds it.
    static func id(_ f: Fixture, _ r: ObjectRef) throws -> Int64? {
        try f.store.read { t in
            try Int64.fetchOne(
                t.db, sql: "SELECT id FROM object WHERE collection = ? AND key = ?", arguments: [r.collection, r.key])
        }
    }

    /// What reading by a remembered id rests on: SQLite never hands out an object's id again.
    @Test("the object table's ids are AUTOINCREMENT, so never reused")
    func idsNeverReused() throws {
        let f = try Fixture()
        let sql = try f.store.read { t in
            try String.fetchOne(t.db, sql: "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'object'")
        }
        #expect(sql?.contains("AUTOINCREMENT") == true)
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
