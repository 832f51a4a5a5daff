// With enforce_ownership, a file a non-admin names while it is not there is judged on the
// nearest folder that exists, and found by name only when a rule deletes it: it is then
// identified only through that folder, and only through folders below it the caller owns.
// And a non-admin's call may not change which file a row another owner holds names.

@testable import AssetDaemon
@testable import AssetStore
import AssetStoreTestSupport
import ControlProtocol
import Foundation
import Testing

@Suite(.serialized, .enabled(if: getuid() == 0, "needs root to chown folders to other uids"))
struct MissingFileClaimTests: FileAccessSuite {
    let folders = TempFolders(prefix: "assetd-claim-")
    let bob: UInt32 = 1001
    let eve: UInt32 = 1002

    /// An empty folder of `uid`.
    private func mkdir(_ path: String, uid: UInt32, mode: mode_t = 0o755) {
        #expect(Glibc.mkdir(path, mode) == 0 && chown(path, uid, uid) == 0 && chmod(path, mode) == 0)
    }

    /// A shared folder inside the root anyone may write and rename entries in (no sticky bit).
    private func shared(_ root: String) -> String {
        let path = root + "/shared"
        mkdir(path, uid: 0, mode: 0o777)
        return path
    }

    /// Eve's object `src` deleted (its rule deletes the file), then the unlinks done.
    private func deleteEvesSource(_ store: Store) throws {
        let src: JSONValue = ["collection": .string("u\(eve)"), "key": "src"]
        _ = try MethodTable.call("object.delete", src, context(store, uid: eve)).get()
        _ = try store.sweep()
    }

    @Test("Bob's folder renamed in place of the one Eve's missing file was judged on: his file is kept")
    func folderSwappedWhileMissing() throws {
        let (store, root) = try openStore()
        defer { store.close() }
        let shared = shared(root)
        mkdir(shared + "/eve", uid: eve)
        let bobsFile = try folder(shared, "bob", uid: bob, gid: bob, mode: 0o755, fileOwner: bob)
        let claimed = shared + "/eve/x.mp4"
        #expect(try addEdge(claimed, context(store, uid: eve)) == nil)  // not there: judged on her folder
        #expect(rename(shared + "/eve", shared + "/eve-away") == 0 && rename(shared + "/bob", shared + "/eve") == 0)
        try deleteEvesSource(store)
        #expect(FileManager.default.fileExists(atPath: claimed), "Bob's file, now at Eve's path, is kept")
        #expect(!FileManager.default.fileExists(atPath: bobsFile))  // moved, not removed
    }

    @Test("the same swap under an object's own file field, expired by a policy: Bob's file is kept")
    func folderSwappedWhileMissingExpired() throws {
        let clock = TestClock()
        let (store, root) = try openStore(clock: clock)
        defer { store.close() }
        let shared = shared(root)
        mkdir(shared + "/eve", uid: eve)
        _ = try folder(shared, "bob", uid: bob, gid: bob, mode: 0o755, fileOwner: bob)
        let claimed = shared + "/eve/x.mp4"
        #expect(put(claimed, context(store, uid: eve)) == nil)
        #expect(rename(shared + "/eve", shared + "/eve-away") == 0 && rename(shared + "/bob", shared + "/eve") == 0)
        clock.advance(3600)
        let plan = try store.expire(collection: "u\(eve)", olderThan: 60, idle: nil)
        #expect(plan.objects.count == 1)
        _ = try store.sweep()
        #expect(FileManager.default.fileExists(atPath: claimed), "Bob's file, now at Eve's path, is kept")
    }

    @Test("a folder Bob makes later where Eve named a missing file: his file in it is kept")
    func folderMadeLaterByAnother() throws {
        let (store, root) = try openStore()
        defer { store.close() }
        let shared = shared(root)
        let claimed = shared + "/new/x.mp4"
        #expect(try addEdge(claimed, context(store, uid: eve)) == nil)  // judged on the shared folder
        mkdir(shared + "/new", uid: bob)
        #expect(FileManager.default.createFile(atPath: claimed, contents: Data("bob".utf8)))
        #expect(chown(claimed, bob, bob) == 0)
        try deleteEvesSource(store)
        #expect(FileManager.default.fileExists(atPath: claimed), "in Bob's folder: not Eve's to unlink")
    }

    @Test("Eve's missing file made later in folders of her own below the one judged is unlinked")
    func madeLaterByTheCaller() throws {
        let (store, root) = try openStore()
        defer { store.close() }
        let shared = shared(root)
        mkdir(shared + "/eve", uid: eve)
        let claimed = shared + "/eve/sub/x.mp4"
        #expect(try addEdge(claimed, context(store, uid: eve)) == nil)
        mkdir(shared + "/eve/sub", uid: eve)
        #expect(FileManager.default.createFile(atPath: claimed, contents: Data("eve".utf8)))
        #expect(chown(claimed, eve, eve) == 0)
        try deleteEvesSource(store)
        #expect(!FileManager.default.fileExists(atPath: claimed))
    }

    @Test("Eve names Bob's registered file while his folder is renamed away: refused, his file kept")
    func registeredFileNamedWhileAway() throws {
        let (store, root) = try openStore()
        defer { store.close() }
        let shared = shared(root)
        let bobsFile = try folder(shared, "bob", uid: bob, gid: bob, mode: 0o755, fileOwner: bob)
        let b = context(store, uid: bob)
        let bobsSource: JSONValue = ["collection": .string("u\(bob)"), "key": "holder"]
        _ = try MethodTable.call(
            "object.put", ["collection": bobsSource["collection"]!, "key": "holder", "value": [:]], b
        )
        .get()
        let bobsEdge: JSONValue = ["name": "keep", "source": bobsSource, "destination": ["file": .string(bobsFile)]]
        _ = try MethodTable.call("edge.add", bobsEdge, b).get()
        #expect(rename(shared + "/bob", shared + "/bob-away") == 0)
        #expect(try addEdge(bobsFile, context(store, uid: eve)) == "permission_denied")
        #expect(rename(shared + "/bob-away", shared + "/bob") == 0)
        // Bob lets go of it; had Eve's edge been added, hers would be the last, and its rule would delete it.
        _ = try MethodTable.call("edge.remove", bobsEdge, b).get()
        try deleteEvesSource(store)
        #expect(FileManager.default.fileExists(atPath: bobsFile))
    }
}
