// Objects of different owners under enforce_ownership, run in process as OwnedFilesTests: a
// rule of an edge an admin's template derives from Alice's object never deletes Bob's object
// (nor, by its rules, Bob's file), whether her value lets go of it or her object goes; her own
// objects still go by her rules. Without enforce_ownership the rule deletes Bob's as before.

@testable import AssetDaemon
import AssetStore
import AssetStoreTestSupport
import ControlProtocol
import Foundation
import Testing

@Suite struct OwnedObjectsTests {
    private let folders = TempFolders(prefix: "assetd-ownedobjects-")

    /// A store with one root, writable by all (each may name its files, FileAccessTests), and
    /// the root's path.
    private func openStore(enforce: Bool) throws -> (Store, String) {
        let dir = try folders.make()
        try FileManager.default.createDirectory(atPath: dir + "/root", withIntermediateDirectories: true)
        #expect(chmod(dir + "/root", 0o777) == 0)
        var c = StoreConfiguration(roots: [dir + "/root"])
        c.enforceOwnership = enforce
        return (try Store(path: dir + "/db.sqlite", configuration: c), dir + "/root")
    }

    private func context(_ store: Store, uid: UInt32, admin: Bool = false, enforce: Bool) -> MethodContext {
        MethodContext(
            store: store, caller: Caller(uid: uid, userName: "u\(uid)", isAdmin: admin), enforceOwnership: enforce)
    }

    @discardableResult
    private func call(_ method: String, _ params: JSONValue, _ ctx: MethodContext) throws -> JSONValue {
        try MethodTable.call(method, params, ctx).get().result
    }

    private func ref(_ collection: String, _ key: String) -> JSONValue {
        ["collection": .string(collection), "key": .string(key)]
    }

    /// The admin's template `refs` from collection `a` to `blobs` with `rule`; Bob's blob B
    /// holding the file `b.bin` (created), and its path.
    private func setUp(
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
    private func bobIntact(_ store: Store, _ file: String, _ bob: MethodContext) throws -> Bool {
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
}
