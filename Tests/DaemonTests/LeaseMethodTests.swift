// lease.release and lease.list between connections, run in process (MethodTable with one
// context per connection, so no daemon and no second uid are needed): a lease is ended only by
// its own connection or an admin.

@testable import AssetDaemon
import AssetStore
import AssetStoreTestSupport
import ControlProtocol
import Foundation
import Testing

@Suite struct LeaseMethodTests {
    private let folders = TempFolders(prefix: "assetd-leasemethods-")

    /// A store in a fresh temp folder with one root, and that root.
    private func openStore() throws -> (Store, String) {
        let dir = try folders.make()
        try FileManager.default.createDirectory(atPath: dir + "/root", withIntermediateDirectories: true)
        let store = try Store(path: dir + "/db.sqlite", configuration: StoreConfiguration(roots: [dir + "/root"]))
        return (store, dir + "/root")
    }

    /// The context of connection `connection` of user `uid`.
    private func context(
        _ store: Store, connection: UInt64, uid: UInt32, admin: Bool = false, enforce: Bool = false
    ) -> MethodContext {
        MethodContext(
            store: store, caller: Caller(uid: uid, userName: "u\(uid)", isAdmin: admin), enforceOwnership: enforce,
            connection: connection)
    }

    private func call(_ method: String, _ params: JSONValue, _ ctx: MethodContext) throws -> JSONValue {
        try MethodTable.call(method, params, ctx).get().result
    }

    @Test("another connection's release of a lease is denied and the lease lives; an admin's ends it")
    func releaseByOthers() throws {
        let (store, root) = try openStore()
        defer { store.close() }
        let a = context(store, connection: 1, uid: 1000)
        let b = context(store, connection: 2, uid: 1001)
        let admin = context(store, connection: 3, uid: 0, admin: true)
        let lease = try call("lease.acquire", ["files": [.string(root + "/a.bin")], "ttl": 60], a)
        let id = try #require(lease["lease"])
        let denied = MethodTable.call("lease.release", ["lease": id], b)
        guard case .failure(let e) = denied else {
            Issue.record("another connection released the lease")
            return
        }
        #expect(e.stableCode == "permission_denied")
        let listed = try call("lease.list", [:], a)["leases"]?.arrayValue ?? []
        #expect(listed.map { $0["lease"] } == [id])
        #expect(store.leases.isLeased(file: root + "/a.bin"))
        #expect(try call("lease.release", ["lease": id], admin)["released"] == true)
        #expect(try call("lease.list", [:], a)["leases"] == [])
        #expect(!store.leases.isLeased(file: root + "/a.bin"))
    }
}
