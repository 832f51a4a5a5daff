// With enforce_ownership, what a non-admin's leases keep from eviction may not pass its quota:
// an owner renewing leases of its own objects kept them outside its quota and the byte budget,
// which took the rest from the other owners. In process, as LeaseOwnershipTests.

@testable import AssetDaemon
@testable import AssetStore
import AssetStoreTestSupport
import ControlProtocol
import Foundation
import Testing

@Suite struct LeaseQuotaTests: FileAccessSuite {
    let folders = TempFolders(prefix: "assetd-leasequota-")
    let bob: UInt32 = 1001
    let eve: UInt32 = 1002

    @Test("a non-admin's leases keep at most its quota's bytes; admins' and others' are not counted")
    func quota() throws {
        let (store, root) = try openStore()
        defer { store.close() }
        var p = PolicyConfiguration()
        p.quotas = [.init(owner: "u1001", maxBytes: 150)]
        store.policy = p
        let admin = context(store, uid: 0, admin: true)
        // Bob's objects: o1 and o3 share a 100-byte file, o2 has one of its own.
        for (key, name) in [("o1", "a"), ("o2", "b"), ("o3", "a")] {
            let path = root + "/" + name + ".bin"
            if !FileManager.default.fileExists(atPath: path) {
                #expect(FileManager.default.createFile(atPath: path, contents: Data(count: 100)))
            }
            try call(
                "object.put",
                ["collection": "c", "key": .string(key), "value": ["file": .string(path)], "owner": "u1001"],
                admin)
        }
        let bob = connection(store, uid: bob)
        #expect(lease(bob, objects: [("c", "o1")]) == nil)
        #expect(lease(bob, objects: [("c", "o3"), ("c", "later")]) == nil)  // the same file, once
        #expect(lease(bob, objects: [("c", "o2")]) == "lease_limit")
        #expect(lease(bob, files: [root + "/b.bin"]) == "lease_limit")  // keeps o2, its holder
        // On another connection of his too; an admin's lease is not his.
        #expect(lease(context(store, uid: 0, admin: true).withConnection(77), objects: [("c", "o2")]) == nil)
        var other = connection(store, uid: self.bob)
        other.connection = 99
        #expect(lease(other, objects: [("c", "o2")]) == "lease_limit")
        // Released, his leases make room again.
        for l in store.leases.active() where l.uid == self.bob { store.leases.release(l.id) }
        #expect(lease(bob, objects: [("c", "o2")]) == nil)
        // Without a quota for his name nothing is counted.
        #expect(lease(connection(store, uid: eve), objects: [("c", "x")]) == nil)
    }
}

extension MethodContext {
    fileprivate func withConnection(_ n: UInt64) -> MethodContext {
        var c = self
        c.connection = n
        return c
    }
}
