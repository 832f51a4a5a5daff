// The order of lease.acquire's checks: a lease past a bound is refused (lease_limit) before
// whose its objects and files are is judged, so that a refused request of many files pays no
// owner reads and no walk of each file. Run in process, as LeaseOwnershipTests.

@testable import AssetDaemon
@testable import AssetStore
import AssetStoreTestSupport
import ControlProtocol
import Foundation
import Synchronization
import Testing

@Suite(.serialized)
struct LeaseCheckOrderTests: FileAccessSuite {
    let folders = TempFolders(prefix: "assetd-leaseorder-")
    let bob: UInt32 = 1001
    let eve: UInt32 = 1002

    /// Eve's connection, its leases bounded to `perHolder` entries.
    private func bounded(_ store: Store, _ perHolder: Int) -> MethodContext {
        var ctx = connection(store, uid: eve)
        ctx.leaseBounds = LeaseBounds(perHolder: perHolder, total: 100)
        return ctx
    }

    @Test("a lease past the bound that names another's object is lease_limit, not permission_denied")
    func boundBeforeOwners() throws {
        let (store, _) = try openStore()
        defer { store.close() }
        try call("object.put", ["collection": "u1001", "key": "o", "value": [:]], context(store, uid: bob))
        let eve = bounded(store, 2)
        #expect(lease(eve, objects: [("u1002", "a"), ("u1002", "b"), ("u1001", "o")]) == "lease_limit")
        #expect(lease(eve, objects: [("u1002", "a"), ("u1001", "o")]) == "permission_denied")
        #expect(lease(eve, objects: [("u1002", "a"), ("u1002", "b")]) == nil)
    }

    @Test(
        "a lease of files past the bound walks none of them",
        .enabled(if: getuid() == 0, "needs root to chown a folder to another uid"))
    func boundBeforeWalks() throws {
        let (store, root) = try openStore()
        defer { store.close() }
        let own = try folder(root, "eve", uid: eve, gid: eve, mode: 0o755, fileOwner: eve)
        let files = [own] + (0..<3).map { root + "/eve/\($0).part" }
        let probes = Atomic<Int>(0)
        FileProbe.stepHooks.withLock {
            $0[root] = { step in if step == root { probes.add(1, ordering: .relaxed) } }
        }
        FileProbe.anyStepHook.store(true, ordering: .relaxed)
        defer { FileProbe.stepHooks.withLock { $0[root] = nil } }
        #expect(lease(bounded(store, 3), files: files) == "lease_limit")
        #expect(probes.load(ordering: .relaxed) == 0)
        // Within the bound, each file no object of hers holds is judged by a walk.
        #expect(lease(bounded(store, 4), files: files) == nil)
        #expect(probes.load(ordering: .relaxed) == 4)
    }
}
