// The bounds of the count of a write that can grow what a non-admin's leases keep: its own
// errors come before lease_limit, a write that keeps or shrinks what they keep passes even
// over the quota, and the uid's leases are walked a chunk per hold of the registry's lock.

@testable import AssetDaemon
@testable import AssetStore
import AssetStoreTestSupport
import ControlProtocol
import Foundation
import Testing

extension LeaseQuotaGrowthTests {
    @Test("a write's own errors come before its lease_limit, alone or in a transact")
    func errorOrder() throws {
        let (store, dir) = try setUp()
        defer { store.close() }
        let bob = connection(store, uid: self.bob)
        let admin = context(store, uid: 0, admin: true)
        try call("object.put", ["collection": "c", "key": "eves", "value": [:], "owner": "u1002"], admin)
        #expect(lease(bob, objects: [("c", "o1")]) == nil)  // 0 bytes: o1 is not there yet
        // A put of o1 giving it c.bin (200 bytes, past his quota) for another owner: not his
        // to make. In a transact, with a put of Eve's object after it: the same.
        let forEve: JSONValue = [
            "collection": "c", "key": "o1", "value": ["file": .string(dir + "/c.bin")], "owner": "u1002",
        ]
        #expect(code(MethodTable.call("object.put", forEve, bob)) == "permission_denied")
        let ops: [JSONValue] = [
            ["method": "object.put", "params": putParams("o1", dir + "/c.bin")],
            ["method": "object.put", "params": putParams("eves", nil)],
        ]
        #expect(code(MethodTable.call("transact", ["ops": .array(ops)], bob)) == "permission_denied")
        // His own, the same put: refused for the quota, and nothing written.
        #expect(code(MethodTable.call("object.put", putParams("o1", dir + "/c.bin"), bob)) == "lease_limit")
        #expect(try file(store, "o1") == nil)
    }

    @Test("a write that keeps or shrinks what the leases keep passes, even over the quota")
    func overQuota() throws {
        let (store, dir) = try setUp()
        defer { store.close() }
        let bob = connection(store, uid: self.bob)
        try call("object.put", putParams("o1", dir + "/c.bin"), bob)
        try call("object.put", putParams("o2", dir + "/a.bin"), bob)
        // Leased past the quota (granted in process, uncounted): 200 bytes.
        _ = try store.leases.acquire(
            objects: [ObjectRef("c", "o1")], files: [], ttl: 3600, holder: bob.connection, uid: self.bob)
        // Put again as it is, or with another member: it keeps 200.
        try call("object.put", putParams("o1", dir + "/c.bin"), bob)
        try call("transact", ["ops": [["method": "object.put", "params": putParams("o1", dir + "/c.bin")]]], bob)
        // Growing it is refused: an edge to a.bin (300 in all).
        #expect(code(MethodTable.call("edge.add", edgeParams("o1", dir + "/a.bin"), bob)) == "lease_limit")
        // Shrinking it passes: b.bin in place of c.bin (100).
        try call("object.put", putParams("o1", dir + "/b.bin"), bob)
        #expect(try file(store, "o1") == dir + "/b.bin")
    }

    @Test("a transact's put of an object it then gives a leased file is counted with it, not alone")
    func transactKeepsItsPut() throws {
        let (store, dir) = try setUp()
        defer { store.close() }
        let bob = connection(store, uid: self.bob)
        #expect(lease(bob, files: [dir + "/a.bin"]) == nil)  // no holder yet: 0 bytes
        // A put of o9 with c.bin (200, named by no lease), then an edge from o9 to a.bin (100,
        // leased): o9 is kept, c.bin with it: 300 past 150.
        let ops: [JSONValue] = [
            ["method": "object.put", "params": putParams("o9", dir + "/c.bin")],
            ["method": "edge.add", "params": edgeParams("o9", dir + "/a.bin")],
        ]
        #expect(code(MethodTable.call("transact", ["ops": .array(ops)], bob)) == "lease_limit")
        #expect(try file(store, "o9") == nil)
    }

    @Test("a uid's leases are walked 256 a hold of the registry's lock; whether it holds one is counted apart")
    func walkedInChunks() throws {
        let (store, _) = try setUp()
        defer { store.close() }
        var ids = [String]()
        for i in 0..<600 {
            ids.append(
                try store.leases.acquire(
                    objects: [ObjectRef("c", "k\(i)")], files: [], ttl: 3600, holder: 7, uid: self.bob
                ).id)
        }
        _ = store.leases.takeMostWalkedPerHold()
        #expect(store.leases.leased(uid: self.bob).objects.count == 600)
        #expect(store.leases.takeMostWalkedPerHold() == 256)
        #expect(store.leases.holdsLeases(uid: self.bob) && !store.leases.holdsLeases(uid: self.eve))
        for id in ids.dropLast() { _ = store.leases.release(id) }
        #expect(store.leases.holdsLeases(uid: self.bob))
        _ = store.leases.release(ids.last!)
        #expect(!store.leases.holdsLeases(uid: self.bob))
    }
}
