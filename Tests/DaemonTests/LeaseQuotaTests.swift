// With enforce_ownership, what a non-admin's leases keep from eviction may not pass its quota:
// an owner renewing leases of its own objects kept them outside its quota and the byte budget,
// which took the rest from the other owners. In process, as LeaseOwnershipTests.

@testable import AssetDaemon
@testable import AssetStore
import AssetStoreTestSupport
import ControlProtocol
import Foundation
import Synchronization
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

    @Test("two leases of one user at once, each within the quota alone, are counted one after the other")
    func concurrent() throws {
        let (store, root) = try openStore()
        defer { store.close() }
        var p = PolicyConfiguration()
        p.quotas = [.init(owner: "u1001", maxBytes: 150)]
        store.policy = p
        let admin = context(store, uid: 0, admin: true)
        for key in ["o1", "o2"] {
            let path = root + "/" + key + ".bin"
            #expect(FileManager.default.createFile(atPath: path, contents: Data(count: 100)))
            try call(
                "object.put",
                ["collection": "c", "key": .string(key), "value": ["file": .string(path)], "owner": "u1001"],
                admin)
        }
        // Two connections of Bob's. The first, counted, starts the second and goes on once
        // that waits for it, or (counted alongside, the race) has been granted.
        let first = connection(store, uid: bob)
        let second = first.withConnection(99)
        let params: @Sendable (String) -> JSONValue = { key in
            ["objects": [["collection": "c", "key": .string(key)]], "ttl": "1h"]
        }
        let secondOutcome = Outcome()
        let waitsOrDone = DispatchSemaphore(value: 0)
        let done = DispatchGroup()
        let started = Atomic<Bool>(false)
        store.leases.uidLocks.waiting.withLock { $0 = { waitsOrDone.signal() } }
        store.leases.uidLocks.counted.withLock {
            $0 = {
                guard !started.exchange(true, ordering: .relaxed) else { return }
                DispatchQueue.global().async(group: done) {
                    secondOutcome.set(MethodTable.call("lease.acquire", params("o2"), second))
                    waitsOrDone.signal()
                }
                waitsOrDone.wait()
            }
        }
        let firstOutcome = MethodTable.call("lease.acquire", params("o1"), first)
        done.wait()
        let codes = [firstOutcome, secondOutcome.get()!].map { r -> String? in
            if case .failure(let e) = r { e.stableCode } else { nil }
        }
        #expect(codes == [nil, "lease_limit"])
    }
}

/// What another thread's call answered.
private final class Outcome: @unchecked Sendable {  // under its lock
    private let lock = NSLock()
    private var value: Result<MethodOutcome, RPCError>?
    func set(_ v: Result<MethodOutcome, RPCError>) { lock.withLock { value = v } }
    func get() -> Result<MethodOutcome, RPCError>? { lock.withLock { value } }
}

extension MethodContext {
    fileprivate func withConnection(_ n: UInt64) -> MethodContext {
        var c = self
        c.connection = n
        return c
    }
}
