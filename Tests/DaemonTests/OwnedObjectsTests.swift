// Objects of different owners under enforce_ownership, run in process as OwnedFilesTests: a
// rule of an edge an admin's template derives from Alice's object never deletes Bob's object
// (nor, by its rules, Bob's file), whether her value lets go of it or her object goes; her own
// objects still go by her rules. Nor do her edges deny Bob's delete, take her objects with it
// (so her deny edges and her cascade's size decide nothing for him), or keep his object alive
// by reference counting. Without enforce_ownership the rules act across owners as before.

@testable import AssetDaemon
import AssetStore
import AssetStoreTestSupport
import ControlProtocol
import Foundation
import Testing

@Suite struct OwnedObjectsTests {
    let folders = TempFolders(prefix: "assetd-ownedobjects-")

    /// A store with one root, writable by all (each may name its files, FileAccessTests), and
    /// the root's path.
    func openStore(enforce: Bool, clock: TestClock? = nil) throws -> (Store, String) {
        let dir = try folders.make()
        try FileManager.default.createDirectory(atPath: dir + "/root", withIntermediateDirectories: true)
        #expect(chmod(dir + "/root", 0o777) == 0)
        var c = StoreConfiguration(roots: [dir + "/root"])
        c.enforceOwnership = enforce
        if let clock { c.clock = { clock.now } }
        return (try Store(path: dir + "/db.sqlite", configuration: c), dir + "/root")
    }

    func context(_ store: Store, uid: UInt32, admin: Bool = false, enforce: Bool) -> MethodContext {
        MethodContext(
            store: store, caller: Caller(uid: uid, userName: "u\(uid)", isAdmin: admin), enforceOwnership: enforce)
    }

    @discardableResult
    func call(_ method: String, _ params: JSONValue, _ ctx: MethodContext) throws -> JSONValue {
        try MethodTable.call(method, params, ctx).get().result
    }

    func ref(_ collection: String, _ key: String) -> JSONValue {
        ["collection": .string(collection), "key": .string(key)]
    }

    /// The admin's template `refs` from collection `a` to `blobs` with `rule`; Bob's blob B
    /// holding the file `b.bin` (created), and its path.
    func setUp(
        _ store: Store, root: String, rule: String, enforce: Bool
    ) throws -> (alice: MethodContext, bob: MethodContext, file: String) {
        let admin = context(store, uid: 0, admin: true, enforce: enforce)
        let alice = context(store, uid: 1001, enforce: enforce)
        let bob = context(store, uid: 1002, enforce: enforce)
        let template: JSONValue = ["name": "refs", "field": "refs", "to": "blobs", "rules": [.string(rule)]]
        try call("template.set", ["collection": "a", "edges": [template]], admin)
        let file = root + "/b.bin"
        #expect(FileManager.default.createFile(atPath: file, contents: Data("blob".utf8)))
        try call("object.put", ["collection": "blobs", "key": "B", "value": ["file": .string(file)]], bob)
        return (alice, bob, file)
    }

    /// Whether Bob's blob, its file's row and the file are there, and nothing is queued.
    func bobIntact(_ store: Store, _ file: String, _ bob: MethodContext) throws -> Bool {
        let object = try call("object.get", ref("blobs", "B"), bob)
        let row = try call("file.get", ["path": .string(file)], bob)
        let queued = try store.pending()
        return object != .null && row != .null && FileManager.default.fileExists(atPath: file) && queued.isEmpty
    }

    @Test("with enforce_ownership Alice's value letting go of Bob's blob leaves it and its file")
    func valueLetsGo() throws {
        let (store, root) = try openStore(enforce: true)
        defer { store.close() }
        let (alice, bob, file) = try setUp(
            store, root: root, rule: "deleteDestinationIfAllSourcesDeleted", enforce: true)
        try call("object.put", ["collection": "a", "key": "A", "value": ["refs": "B"]], alice)
        try call("object.put", ["collection": "a", "key": "A", "value": [:]], alice)
        #expect(try bobIntact(store, file, bob))
    }

    @Test("with enforce_ownership Alice's delete leaves Bob's blob; her own blob still goes")
    func sourceDeleted() throws {
        let (store, root) = try openStore(enforce: true)
        defer { store.close() }
        let (alice, bob, file) = try setUp(store, root: root, rule: "deleteDestinationIfSourceDeleted", enforce: true)
        try call("object.put", ["collection": "a", "key": "A", "value": ["refs": "B"]], alice)
        try call("object.delete", ref("a", "A"), alice)
        #expect(try bobIntact(store, file, bob))
        let own = root + "/c.bin"
        try call("object.put", ["collection": "blobs", "key": "C", "value": ["file": .string(own)]], alice)
        try call("object.put", ["collection": "a", "key": "A2", "value": ["refs": "C"]], alice)
        try call("object.delete", ref("a", "A2"), alice)
        #expect(try call("object.get", ref("blobs", "C"), alice) == .null)
        #expect(try store.pending().map(\.path) == [own])
    }

    @Test("without enforce_ownership Alice's rule deletes Bob's blob and queues its file, as before")
    func withoutEnforcement() throws {
        let (store, root) = try openStore(enforce: false)
        defer { store.close() }
        let (alice, bob, file) = try setUp(
            store, root: root, rule: "deleteDestinationIfAllSourcesDeleted", enforce: false)
        try call("object.put", ["collection": "a", "key": "A", "value": ["refs": "B"]], alice)
        try call("object.put", ["collection": "a", "key": "A", "value": [:]], alice)
        #expect(try call("object.get", ref("blobs", "B"), bob) == .null)
        #expect(try store.pending().map(\.path) == [file])
    }

    @Test("with enforce_ownership only admins pin; an owner unpins its own", arguments: [true, false])
    func pinsForAdmins(enforce: Bool) throws {
        let (store, root) = try openStore(enforce: enforce)
        defer { store.close() }
        let (_, bob, _) = try setUp(store, root: root, rule: "deleteDestinationIfSourceDeleted", enforce: enforce)
        let refusal: RPCError? = {
            guard case .failure(let e) = MethodTable.call("object.pin", ref("blobs", "B"), bob) else { return nil }
            return e
        }()
        #expect((refusal?.stableCode == StoreError.Code.permissionDenied.rawValue) == enforce)
        #expect(try store.write { try $0.isPinned(ObjectRef("blobs", "B")) }.value == !enforce)
        let admin = context(store, uid: 0, admin: true, enforce: enforce)
        try call("object.pin", ref("blobs", "B"), admin)
        try call("object.unpin", ref("blobs", "B"), bob)
        #expect(try store.write { try $0.isPinned(ObjectRef("blobs", "B")) }.value == false)
    }

    /// The stable code of the error `method` answers, nil if it succeeds.
    func failure(_ method: String, _ params: JSONValue, _ ctx: MethodContext) -> String? {
        guard case .failure(let e) = MethodTable.call(method, params, ctx) else { return nil }
        return e.stableCode
    }

    @Test(
        "Alice's deny edge to Bob's blob keeps it only without enforce_ownership, from his delete and eviction",
        arguments: [true, false])
    func denyAcrossOwners(enforce: Bool) throws {
        let clock = TestClock()
        let (store, root) = try openStore(enforce: enforce, clock: clock)
        defer { store.close() }
        let (alice, bob, _) = try setUp(store, root: root, rule: "denyDeleteDestination", enforce: enforce)
        let other = root + "/b2.bin"
        #expect(FileManager.default.createFile(atPath: other, contents: Data("blob".utf8)))
        try call("object.put", ["collection": "blobs", "key": "B2", "value": ["file": .string(other)]], bob)
        try call("object.put", ["collection": "a", "key": "A", "value": ["refs": "B"]], alice)
        try call("object.put", ["collection": "a", "key": "A2", "value": ["refs": "B2"]], alice)
        let denied = failure("object.delete", ref("blobs", "B"), bob)
        #expect(denied == (enforce ? nil : StoreError.Code.deleteDenied.rawValue))
        #expect(try (call("object.get", ref("blobs", "B"), bob) == .null) == enforce)
        clock.advance(3600)  // past policy.min_age
        let plan = try store.evict(bytes: nil, owner: "u1002")
        #expect(plan.objects.map(\.ref) == (enforce ? [ObjectRef("blobs", "B2")] : []))
        #expect(plan.skipped[.deny] == (enforce ? nil : 2))
        #expect(try call("object.get", ref("a", "A"), alice) != .null)
        #expect(try call("object.get", ref("a", "A2"), alice) != .null)
    }

    /// Alice's objects `a/A…` naming Bob's blob through `deleteSourceIfDestinationDeleted`.
    func cascadeFixture(
        _ store: Store, root: String, enforce: Bool, keys: [String]
    ) throws -> (alice: MethodContext, bob: MethodContext) {
        let (alice, bob, _) = try setUp(store, root: root, rule: "deleteSourceIfDestinationDeleted", enforce: enforce)
        for key in keys {
            try call("object.put", ["collection": "a", "key": .string(key), "value": ["refs": "B"]], alice)
        }
        return (alice, bob)
    }

    @Test(
        "Bob's delete takes Alice's object, and her deny edge on it refuses him, only without enforce_ownership",
        arguments: [true, false])
    func cascadeAcrossOwnersDenied(enforce: Bool) throws {
        let (store, root) = try openStore(enforce: enforce)
        defer { store.close() }
        let (alice, bob) = try cascadeFixture(store, root: root, enforce: enforce, keys: ["A"])
        try call("object.put", ["collection": "a", "key": "X", "value": [:]], alice)
        let keep: JSONValue = [
            "name": "keep", "source": ref("a", "A"), "destination": ref("a", "X"), "rules": ["denyDeleteSource"],
        ]
        try call("edge.add", keep, alice)
        let denied = failure("object.delete", ref("blobs", "B"), bob)
        #expect(denied == (enforce ? nil : StoreError.Code.deleteDenied.rawValue))
        #expect(try (call("object.get", ref("blobs", "B"), bob) == .null) == enforce)
        #expect(try call("object.get", ref("a", "A"), alice) != .null)
        if !enforce {
            // Without the deny edge the cascade takes Alice's object, as before.
            try call("edge.remove", ["name": "keep", "source": ref("a", "A"), "destination": ref("a", "X")], alice)
            try call("object.delete", ref("blobs", "B"), bob)
            #expect(try call("object.get", ref("a", "A"), alice) == .null)
        }
    }

    @Test(
        "Alice's objects cascading from Bob's blob count against his bound only without enforce_ownership",
        arguments: [true, false])
    func cascadeAcrossOwnersBound(enforce: Bool) throws {
        let (store, root) = try openStore(enforce: enforce)
        defer { store.close() }
        var (alice, bob) = try cascadeFixture(store, root: root, enforce: enforce, keys: ["A1", "A2", "A3"])
        bob.cascadeLimit = 2
        let refused = failure("object.delete", ref("blobs", "B"), bob)
        #expect(refused == (enforce ? nil : StoreError.Code.cascadeLimit.rawValue))
        #expect(try (call("object.get", ref("blobs", "B"), bob) == .null) == enforce)
        for key in ["A1", "A2", "A3"] {
            #expect(try call("object.get", ref("a", key), alice) != .null)
        }
        alice.cascadeLimit = 2
        // Her own objects still go by her rules (and count against her bound).
        try call("object.put", ["collection": "blobs", "key": "C", "value": [:]], alice)
        try call("object.put", ["collection": "a", "key": "A4", "value": ["refs": "C"]], alice)
        try call("object.delete", ref("blobs", "C"), alice)
        #expect(try call("object.get", ref("a", "A4"), alice) == .null)
    }

    @Test(
        "Alice's retaining edge keeps Bob's blob after his last reference only without enforce_ownership",
        arguments: [true, false])
    func retainersAcrossOwners(enforce: Bool) throws {
        let (store, root) = try openStore(enforce: enforce)
        defer { store.close() }
        let (alice, bob, file) = try setUp(
            store, root: root, rule: "deleteDestinationIfAllSourcesDeleted", enforce: enforce)
        try call("object.put", ["collection": "a", "key": "P", "value": ["refs": "B"]], bob)
        try call("object.put", ["collection": "a", "key": "E", "value": ["refs": "B"]], alice)
        try call("object.delete", ref("a", "P"), bob)
        #expect(try (call("object.get", ref("blobs", "B"), bob) == .null) == enforce)
        #expect(try store.pending().map(\.path) == (enforce ? [file] : []))
        try call("object.put", ["collection": "a", "key": "E", "value": [:]], alice)
        // Without enforce_ownership her edge was the last retainer, and its going deletes the blob.
        #expect(try call("object.get", ref("blobs", "B"), bob) == .null)
        #expect(try store.pending().map(\.path) == [file])
    }

    @Test(
        "Bob's blob does not keep Alice's object that counts its destinations, only without enforce_ownership",
        arguments: [true, false])
    func sourceRetainersAcrossOwners(enforce: Bool) throws {
        let (store, root) = try openStore(enforce: enforce)
        defer { store.close() }
        let (alice, bob, _) = try setUp(
            store, root: root, rule: "deleteSourceIfAllDestinationsDeleted", enforce: enforce)
        try call("object.put", ["collection": "blobs", "key": "D", "value": [:]], alice)
        try call("object.put", ["collection": "a", "key": "S", "value": ["refs": ["B", "D"]]], alice)
        try call("object.delete", ref("blobs", "D"), alice)
        #expect(try (call("object.get", ref("a", "S"), alice) == .null) == enforce)
        try call("object.delete", ref("blobs", "B"), bob)
        // Without enforce_ownership Bob's blob was its last destination.
        #expect(try call("object.get", ref("a", "S"), alice) == .null)
    }
}
