// A dry policy run holds the writer, and with it every client's writes, for its whole plan, so
// one by a client that is not an admin plans a single batch and says it was cut short; an
// admin's plans everything (assetd(8), CONTROL PROTOCOL, Methods).

@testable import AssetDaemon
import AssetStore
import AssetStoreTestSupport
import ControlProtocol
import Foundation
import Testing

@Suite struct DryRunLimitTests {
    private let folders = TempFolders(prefix: "assetd-dryrunlimit-")

    /// A store whose policy batches 2 objects and expires any age, holding 5 objects of alice's, each
    /// with a file (an eviction passes over objects without one).
    private func openStore() throws -> Store {
        let dir = try folders.make()
        try FileManager.default.createDirectory(atPath: dir + "/root", withIntermediateDirectories: true)
        var c = StoreConfiguration(roots: [dir + "/root"])
        var p = PolicyConfiguration()
        p.batch = 2
        p.minAge = 0
        p.ttls = [.init(collection: "c", maxAge: 0)]
        c.policy = p
        let store = try Store(path: dir + "/db.sqlite", configuration: c)
        try store.write(owner: "alice") { tx in
            for i in 0..<5 {
                let path = dir + "/root/f\(i)"
                try Data(count: 10).write(to: URL(fileURLWithPath: path))
                try tx.put(ref("c", "k\(i)"), value: ["file": .string(path)])
            }
        }
        return store
    }

    private func context(_ store: Store, admin: Bool) -> MethodContext {
        MethodContext(
            store: store, caller: Caller(uid: admin ? 0 : 1000, userName: admin ? "root" : "u1000", isAdmin: admin),
            enforceOwnership: false)
    }

    @Test(
        "a non-admin's dry run plans one batch and says truncated; an admin's plans all",
        arguments: [
            ("policy.enforce", ["dry_run": true] as JSONValue),
            ("policy.expire", ["older_than": "0s", "dry_run": true] as JSONValue),
            ("policy.evict", ["owner": "alice", "dry_run": true] as JSONValue),
        ])
    func oneBatchForNonAdmins(method: String, params: JSONValue) throws {
        let store = try openStore()
        defer { store.close() }
        let user = try MethodTable.call(method, params, context(store, admin: false)).get().result
        #expect(user["objects"]?.arrayValue?.count == 2, "\(user)")
        #expect(user["truncated"] == true)
        #expect(user["dry_run"] == true)
        let admin = try MethodTable.call(method, params, context(store, admin: true)).get().result
        #expect(admin["objects"]?.arrayValue?.count == 5, "\(admin)")
        #expect(admin["truncated"] == nil)
        #expect(try store.read { try $0.objectCount() } == 5, "a dry run changes nothing")
    }
}
