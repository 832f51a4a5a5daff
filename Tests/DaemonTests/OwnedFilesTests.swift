// Files shared between owners under enforce_ownership, run in process (MethodTable with one
// context per caller, as LeaseMethodTests): a rule of Eve's edge, manual or derived, added
// before or after Bob's, never deletes a file Bob's object holds (nor, with it, Bob's edge and
// object); once Bob's holder goes too, the file goes by the rules left. Without
// enforce_ownership the rule deletes the file as before.

@testable import AssetDaemon
import AssetStore
import AssetStoreTestSupport
import ControlProtocol
import Foundation
import Testing

@Suite struct OwnedFilesTests {
    private let folders = TempFolders(prefix: "assetd-ownedfiles-")

    /// A store with one root holding the file `x.mp4`, and that file's path. The root is
    /// writable by all, not sticky: a folder each may unlink the other's files in, so that
    /// each may name them (FileAccessTests); the rules must still not delete them.
    private func openStore(enforce: Bool) throws -> (Store, String) {
        let dir = try folders.make()
        try FileManager.default.createDirectory(atPath: dir + "/root", withIntermediateDirectories: true)
        #expect(chmod(dir + "/root", 0o777) == 0)
        let file = dir + "/root/x.mp4"
        #expect(FileManager.default.createFile(atPath: file, contents: Data("movie".utf8)))
        var c = StoreConfiguration(roots: [dir + "/root"])
        c.enforceOwnership = enforce
        return (try Store(path: dir + "/db.sqlite", configuration: c), file)
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

    /// Eve's edge from her object to `file`, with the rule that deletes it.
    private func addDeletingEdge(_ file: String, _ eve: MethodContext) throws {
        try call(
            "edge.add",
            [
                "name": "steal", "source": ref("eve", "e"), "destination": ["file": .string(file)],
                "rules": ["deleteDestinationIfSourceDeleted"],
            ], eve)
    }

    /// Whether Bob's object and its edge to `file`, the file's row and the file are all there,
    /// and nothing is queued.
    private func bobIntact(_ store: Store, _ file: String, _ bob: MethodContext) throws -> Bool {
        let object = try call("object.get", ref("bob", "b"), bob)
        let edges = try call("edge.count", ["source": ref("bob", "b")], bob)
        let row = try call("file.get", ["path": .string(file)], bob)
        let queued = try store.pending()
        return object != .null && edges == ["count": 1] && row != .null
            && FileManager.default.fileExists(atPath: file) && queued.isEmpty
    }

    @Test("with enforce_ownership Eve's deleting edge to Bob's file, then her delete, leaves his file and object")
    func manualEdgeBefore() throws {
        let (store, file) = try openStore(enforce: true)
        defer { store.close() }
        let bob = context(store, uid: 1001, enforce: true)
        let eve = context(store, uid: 1002, enforce: true)
        try call("object.put", ["collection": "bob", "key": "b", "value": ["file": .string(file)]], bob)
        try call("object.put", ["collection": "eve", "key": "e", "value": [:]], eve)
        try addDeletingEdge(file, eve)
        try call("object.delete", ref("eve", "e"), eve)
        #expect(try bobIntact(store, file, bob))
        // Bob's own holder going releases it, by his reference counting.
        try call("object.delete", ref("bob", "b"), bob)
        #expect(try store.pending().map(\.path) == [file])
    }

    @Test("with enforce_ownership a holder Bob adds after Eve's deleting edge keeps the file too")
    func otherOwnerAddsLater() throws {
        let (store, file) = try openStore(enforce: true)
        defer { store.close() }
        let bob = context(store, uid: 1001, enforce: true)
        let eve = context(store, uid: 1002, enforce: true)
        try call("object.put", ["collection": "eve", "key": "e", "value": [:]], eve)
        try addDeletingEdge(file, eve)
        try call("object.put", ["collection": "bob", "key": "b", "value": ["file": .string(file)]], bob)
        try call("object.delete", ref("eve", "e"), eve)
        #expect(try bobIntact(store, file, bob))
    }

    @Test("with enforce_ownership a template's deleting rule on Eve's file field spares Bob's file")
    func derivedEdge() throws {
        let (store, file) = try openStore(enforce: true)
        defer { store.close() }
        let admin = context(store, uid: 0, admin: true, enforce: true)
        let bob = context(store, uid: 1001, enforce: true)
        let eve = context(store, uid: 1002, enforce: true)
        let template: JSONValue = [
            "name": "thumb", "field": "thumb", "to": "file", "rules": ["deleteDestinationIfSourceDeleted"],
        ]
        try call("template.set", ["collection": "eve", "edges": [template]], admin)
        try call("object.put", ["collection": "bob", "key": "b", "value": ["file": .string(file)]], bob)
        try call("object.put", ["collection": "eve", "key": "e", "value": ["thumb": .string(file)]], eve)
        // Dropping the field fires the rule as the source going would.
        try call("object.put", ["collection": "eve", "key": "e", "value": [:]], eve)
        #expect(try bobIntact(store, file, bob))
        try call("object.put", ["collection": "eve", "key": "e", "value": ["thumb": .string(file)]], eve)
        try call("object.delete", ref("eve", "e"), eve)
        #expect(try bobIntact(store, file, bob))
        // Eve's own file, held by her alone, still goes by her rule.
        let own = (file as NSString).deletingLastPathComponent + "/own.mp4"
        try call("object.put", ["collection": "eve", "key": "e2", "value": ["thumb": .string(own)]], eve)
        try call("object.delete", ref("eve", "e2"), eve)
        #expect(try store.pending().map(\.path) == [own])
    }

    @Test("without enforce_ownership the rule deletes the file with Bob's edge, as before")
    func withoutEnforcement() throws {
        let (store, file) = try openStore(enforce: false)
        defer { store.close() }
        let bob = context(store, uid: 1001, enforce: false)
        let eve = context(store, uid: 1002, enforce: false)
        try call("object.put", ["collection": "bob", "key": "b", "value": ["file": .string(file)]], bob)
        try call("object.put", ["collection": "eve", "key": "e", "value": [:]], eve)
        try addDeletingEdge(file, eve)
        try call("object.delete", ref("eve", "e"), eve)
        #expect(try store.pending().map(\.path) == [file])
        #expect(try call("edge.count", ["source": ref("bob", "b")], bob) == ["count": 0])
        #expect(try call("file.get", ["path": .string(file)], bob) == .null)
    }
}
