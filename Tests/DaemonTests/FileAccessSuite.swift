// What the suites of enforce_ownership's file checks share: a store with one root, folders
// chowned to other uids, and calls made as those uids (in process, as LeaseMethodTests).

@testable import AssetDaemon
@testable import AssetStore
import AssetStoreTestSupport
import ControlProtocol
import Foundation
import Testing

protocol FileAccessSuite {
    var folders: TempFolders { get }
    var bob: UInt32 { get }
    var eve: UInt32 { get }
}

extension FileAccessSuite {
    /// A store with one root, and the root; on `clock` if given.
    func openStore(clock: TestClock? = nil) throws -> (Store, String) {
        let dir = try folders.make()
        let root = dir + "/root"
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        var configuration = StoreConfiguration(roots: [root])
        if let clock { configuration.clock = { clock.now } }
        let store = try Store(path: dir + "/db.sqlite", configuration: configuration)
        return (store, root)
    }

    /// The folder `name` under `root` with this owner, group and mode, holding a file of `fileOwner`.
    func folder(
        _ root: String, _ name: String, uid: UInt32, gid: UInt32, mode: mode_t, fileOwner: UInt32
    ) throws -> String {
        let path = root + "/" + name
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
        #expect(chown(path, uid, gid) == 0 && chmod(path, mode) == 0)
        #expect(FileManager.default.createFile(atPath: path + "/x.mp4", contents: Data("movie".utf8)))
        #expect(chown(path + "/x.mp4", fileOwner, fileOwner) == 0)
        return path + "/x.mp4"
    }

    func context(
        _ store: Store, uid: UInt32, gids: [UInt32]? = nil, admin: Bool = false, enforce: Bool = true
    ) -> MethodContext {
        MethodContext(
            store: store, caller: Caller(uid: uid, userName: "u\(uid)", isAdmin: admin, gids: gids ?? [uid]),
            enforceOwnership: enforce)
    }

    /// The stable code of a put by `ctx` of an object of its own holding `file`, nil when it succeeded.
    func put(_ file: String, _ ctx: MethodContext, key: String = "o") -> String? {
        let params: JSONValue = [
            "collection": .string(ctx.caller.userName), "key": .string(key), "value": ["file": .string(file)],
        ]
        guard case .failure(let e) = MethodTable.call("object.put", params, ctx) else { return nil }
        return e.stableCode
    }

    /// The same through edge.add from an object of its own.
    func addEdge(_ file: String, _ ctx: MethodContext) throws -> String? {
        let source: JSONValue = ["collection": .string(ctx.caller.userName), "key": "src"]
        _ = try MethodTable.call("object.put", ["collection": source["collection"]!, "key": "src", "value": [:]], ctx)
            .get()
        let params: JSONValue = [
            "name": "e", "source": source, "destination": ["file": .string(file)],
            "rules": ["deleteDestinationIfSourceDeleted"],
        ]
        guard case .failure(let e) = MethodTable.call("edge.add", params, ctx) else { return nil }
        return e.stableCode
    }

    func registered(_ store: Store, _ file: String) throws -> Bool {
        try MethodTable.call("file.get", ["path": .string(file)], context(store, uid: 0, admin: true)).get().result
            != .null
    }
}
