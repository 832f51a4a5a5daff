// A non-admin's leases counted against its quota again before a write that grows what they
// keep: a leased object put again with bigger files, put first after its lease, or given a file
// by edge.add, and an object of its own given a file it leased, by a put or an edge.add (a file
// lease keeps its holders), alone or in a transact. Counted only at the lease, these kept any
// amount. In process, as LeaseQuotaTests; the daemon hands such a put to the same body, on the
// pool (`countsLeases`, LeasedTurnsTests).

@testable import AssetDaemon
@testable import AssetStore
import AssetStoreTestSupport
import ControlProtocol
import Foundation
import Synchronization
import Testing

@Suite(.serialized, .enabled(if: getuid() == 0, "needs root to chown a folder to another uid"))
struct LeaseQuotaGrowthTests: FileAccessSuite {
    let folders = TempFolders(prefix: "assetd-leasegrowth-")
    let bob: UInt32 = 1001
    let eve: UInt32 = 1002

    /// A store with a quota of `quota` bytes for Bob, and his folder, which holds a.bin and
    /// b.bin and d.bin (100 bytes each) and c.bin (200).
    func setUp(quota: Int64 = 150) throws -> (Store, String) {
        let (store, root) = try openStore()
        var p = PolicyConfiguration()
        p.quotas = [.init(owner: "u1001", maxBytes: quota)]
        store.policy = p
        let dir = root + "/bob"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: false)
        #expect(chown(dir, bob, bob) == 0)
        for (name, size) in [("a", 100), ("b", 100), ("c", 200), ("d", 100)] {
            #expect(FileManager.default.createFile(atPath: "\(dir)/\(name).bin", contents: Data(count: size)))
            #expect(chown("\(dir)/\(name).bin", bob, bob) == 0)
        }
        return (store, dir)
    }

    func putParams(_ key: String, _ file: String?) -> JSONValue {
        ["collection": "c", "key": .string(key), "value": file.map { ["file": .string($0)] } ?? [:]]
    }

    func edgeParams(_ key: String, _ file: String) -> JSONValue {
        [
            "name": "e", "source": ["collection": "c", "key": .string(key)], "destination": ["file": .string(file)],
            "rules": [],
        ]
    }

    func code(_ r: Result<MethodOutcome, RPCError>) -> String? {
        if case .failure(let e) = r { e.stableCode } else { nil }
    }

    func file(_ store: Store, _ key: String) throws -> String? {
        try store.read { try $0.get(ObjectRef("c", key)) }?.value["file"]?.stringValue
    }

    @Test("a put growing what a non-admin's leases keep past its quota is refused, alone or in a transact")
    func put() throws {
        let (store, dir) = try setUp()
        defer { store.close() }
        let bob = connection(store, uid: self.bob)
        try call("object.put", putParams("o1", dir + "/a.bin"), bob)
        #expect(lease(bob, objects: [("c", "o1"), ("c", "new")]) == nil)  // 100 bytes
        // Put again with a bigger file, alone or in a transact: refused, and nothing changed.
        let refused = MethodTable.call("object.put", putParams("o1", dir + "/c.bin"), bob)
        #expect(code(refused) == "lease_limit")
        if case .failure(let e) = refused {
            #expect(e.message.contains("would keep 200 bytes") && e.message.hasSuffix("or write less"))
            #expect(e.data?["detail"] == ["limit": "policy.quota", "value": 150])
        }
        let op: JSONValue = ["method": "object.put", "params": putParams("o1", dir + "/c.bin")]
        #expect(code(MethodTable.call("transact", ["ops": [op]], bob)) == "lease_limit")
        #expect(try file(store, "o1") == dir + "/a.bin")
        // Put first after its lease.
        #expect(code(MethodTable.call("object.put", putParams("new", dir + "/b.bin"), bob)) == "lease_limit")
        #expect(try file(store, "new") == nil)
        // Its file replaced by one as big: the one it held no longer counts.
        try call("object.put", putParams("o1", dir + "/b.bin"), bob)
        #expect(try file(store, "o1") == dir + "/b.bin")
        try call("object.put", putParams("new", nil), bob)
        // An object not leased is not counted.
        try call("object.put", putParams("o2", dir + "/c.bin"), bob)
        // A file lease keeps its holders: an object put naming the file counts with it.
        #expect(lease(bob, files: [dir + "/d.bin"]) == nil)  // held by no object: 100 in all
        #expect(code(MethodTable.call("object.put", putParams("o3", dir + "/d.bin"), bob)) == "lease_limit")
        #expect(try file(store, "o3") == nil)
        // An admin's write is not counted.
        let admin = context(store, uid: 0, admin: true)
        let params: JSONValue = [
            "collection": "c", "key": "o1", "value": ["file": .string(dir + "/c.bin")], "owner": "u1001",
        ]
        try call("object.put", params, admin)
        #expect(try file(store, "o1") == dir + "/c.bin")
    }

    @Test("an edge.add giving a leased object a file, or a leased file a holder, past the quota is refused")
    func edgeAdd() throws {
        let (store, dir) = try setUp()
        defer { store.close() }
        let bob = connection(store, uid: self.bob)
        try call("object.put", putParams("o1", dir + "/a.bin"), bob)
        try call("object.put", putParams("o2", nil), bob)
        #expect(lease(bob, objects: [("c", "o1")]) == nil)  // 100 bytes
        #expect(code(MethodTable.call("edge.add", edgeParams("o1", dir + "/b.bin"), bob)) == "lease_limit")
        let op: JSONValue = ["method": "edge.add", "params": edgeParams("o1", dir + "/b.bin")]
        #expect(code(MethodTable.call("transact", ["ops": [op]], bob)) == "lease_limit")
        // From an object not leased to a file it leased: the object is a holder now.
        #expect(lease(bob, files: [dir + "/d.bin"]) == nil)
        #expect(code(MethodTable.call("edge.add", edgeParams("o2", dir + "/d.bin"), bob)) == "lease_limit")
        #expect(try !store.read { try $0.holders(file: dir + "/d.bin", owner: "u1001") }.own)
        // From an object not leased to a file not leased: not counted.
        try call("edge.add", edgeParams("o2", dir + "/c.bin"), bob)
        // Within the quota, counted and let through.
        var p = PolicyConfiguration()
        p.quotas = [.init(owner: "u1001", maxBytes: 200)]
        store.policy = p
        try call("edge.add", edgeParams("o1", dir + "/b.bin"), bob)
    }

    @Test("a transact's puts and edges are counted together, before it goes to the writer")
    func transact() throws {
        let (store, dir) = try setUp(quota: 250)
        defer { store.close() }
        let bob = connection(store, uid: self.bob)
        try call("object.put", putParams("o1", dir + "/a.bin"), bob)
        #expect(lease(bob, objects: [("c", "o1"), ("c", "o2")]) == nil)  // 100 bytes
        let ops: [JSONValue] = [
            ["method": "object.put", "params": putParams("o2", dir + "/b.bin")],  // 200 alone
            ["method": "edge.add", "params": edgeParams("o1", dir + "/d.bin")],  // 200 alone
            ["method": "object.put", "params": putParams("o3", dir + "/c.bin")],  // not leased
        ]
        #expect(code(MethodTable.call("transact", ["ops": .array(ops)], bob)) == "lease_limit")
        #expect(try file(store, "o2") == nil && file(store, "o3") == nil)
        try call("transact", ["ops": .array(Array(ops[1...]))], bob)
        #expect(try file(store, "o3") == dir + "/c.bin")
    }

    @Test("only a lease, or a write while its uid holds a lease, of a non-admin with a quota is counted")
    func countsLeases() throws {
        let (store, dir) = try setUp()
        defer { store.close() }
        let bob = connection(store, uid: self.bob)
        let eve = connection(store, uid: self.eve)
        func counts(_ c: MethodTable.LeaseCounting, _ ctx: MethodContext, queued: Bool = false) -> Bool {
            MethodTable.countsLeases(c, ctx, queued: queued)
        }
        #expect(!counts(.write, bob))  // no lease yet
        #expect(counts(.write, bob, queued: true))  // behind a call of its uid counted
        #expect(counts(.lease, bob) && !counts(.none, bob))
        #expect(lease(bob, files: [dir + "/d.bin"], objects: [("c", "o1")]) == nil)
        #expect(counts(.write, bob))
        #expect(!counts(.write, connection(store, uid: 0, admin: true)))
        #expect(!counts(.write, connection(store, uid: self.bob, enforce: false)))
        // Eve has no quota: neither her leases nor her writes are counted, leases held or not.
        #expect(!counts(.lease, eve))
        #expect(lease(eve, objects: [("c", "e1")]) == nil)
        #expect(store.leases.holdsLeases(uid: self.eve) && !counts(.write, eve))
        // Released, the uid holds none, and its names are gone from the index.
        for l in store.leases.active() { store.leases.release(l.id) }
        #expect(!counts(.write, bob) && !store.leases.holdsLeases(uid: self.bob))
        #expect(store.leases.state.withLock { $0.names.isEmpty })
    }

    @Test("a write and a lease of one user at once, each within the quota alone, are counted one after the other")
    func concurrent() throws {
        let (store, dir) = try setUp(quota: 350)
        defer { store.close() }
        let first = connection(store, uid: bob)
        try call("object.put", putParams("o1", dir + "/a.bin"), first)
        try call("object.put", putParams("o2", dir + "/c.bin"), first)
        #expect(lease(first, objects: [("c", "o1")]) == nil)  // 100 bytes
        // The first connection's lease of o2 (300 in all), counted, starts the second's edge.add
        // giving o1 b.bin (200 in all), and goes on once that waits for it, or (counted
        // alongside, the race) has been written.
        var other = first
        other.connection = 99
        let second = other
        let secondOutcome = Outcome()
        let waitsOrDone = DispatchSemaphore(value: 0)
        let done = DispatchGroup()
        let started = Atomic<Bool>(false)
        store.leases.uidLocks.waiting.withLock { $0 = { waitsOrDone.signal() } }
        let edge = edgeParams("o1", dir + "/b.bin")
        store.leases.uidLocks.counted.withLock {
            $0 = {
                guard !started.exchange(true, ordering: .relaxed) else { return }
                DispatchQueue.global().async(group: done) {
                    secondOutcome.set(MethodTable.call("edge.add", edge, second))
                    waitsOrDone.signal()
                }
                waitsOrDone.wait()
            }
        }
        let params: JSONValue = ["objects": [["collection": "c", "key": "o2"]], "ttl": "1h"]
        let firstOutcome = MethodTable.call("lease.acquire", params, first)
        done.wait()
        #expect([code(firstOutcome), code(secondOutcome.get()!)] == [nil, "lease_limit"])
    }
}

/// What another thread's call answered.
private final class Outcome: @unchecked Sendable {  // under its lock
    private let lock = NSLock()
    private var value: Result<MethodOutcome, RPCError>?
    func set(_ v: Result<MethodOutcome, RPCError>) { lock.withLock { value = v } }
    func get() -> Result<MethodOutcome, RPCError>? { lock.withLock { value } }
}
