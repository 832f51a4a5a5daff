// With enforce_ownership, a file a non-admin names is judged then (on its folder, or for a
// file not there yet the nearest folder that exists), and the registry row keeps that
// judgement, its claim: when a rule deletes the row, the file at its path is taken only as
// far as the claim covers it, whatever looks (another user's, an admin's) recorded since.

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

    /// Eve's and Bob's folders in `shared`, each holding its owner's x.mp4; Eve's file.
    private func twoFolders(_ shared: String) throws -> String {
        _ = try folder(shared, "bob", uid: bob, gid: bob, mode: 0o755, fileOwner: bob)
        return try folder(shared, "eve", uid: eve, gid: eve, mode: 0o755, fileOwner: eve)
    }

    /// Bob's folder renamed to the name of Eve's, hers out of the way: anyone may, in `shared`.
    private func swapBobIn(_ shared: String) {
        #expect(rename(shared + "/eve", shared + "/eve-away") == 0 && rename(shared + "/bob", shared + "/eve") == 0)
    }

    /// An admin's put of Eve's object `src`, her ownership kept, naming no file.
    private func adminPutsEves(_ store: Store) throws {
        let put: JSONValue = [
            "collection": .string("u\(eve)"), "key": "src", "value": ["n": 2], "owner": .string("u\(eve)"),
        ]
        _ = try MethodTable.call("object.put", put, context(store, uid: 0, admin: true)).get()
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
        swapBobIn(shared)
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
        swapBobIn(shared)
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

    @Test("a file Bob replaced that Eve's object holds too: her later put keeps his row and succeeds")
    func replacedByItsOtherOwner() throws {
        let (store, root) = try openStore()
        defer { store.close() }
        let shared = shared(root)
        let file = shared + "/f.mp4"
        #expect(FileManager.default.createFile(atPath: file, contents: Data("v1".utf8)) && chown(file, bob, bob) == 0)
        let b = context(store, uid: bob)
        let holder: JSONValue = ["collection": .string("u\(bob)"), "key": "holder"]
        _ = try MethodTable.call("object.put", ["collection": holder["collection"]!, "key": "holder", "value": [:]], b)
            .get()
        _ = try MethodTable.call(
            "edge.add", ["name": "keep", "source": holder, "destination": ["file": .string(file)]], b
        )
        .get()
        let e = context(store, uid: eve)
        #expect(try addEdge(file, e) == nil)  // she may write the shared folder
        #expect(FileManager.default.createFile(atPath: file + ".new", contents: Data("v2".utf8)))
        #expect(chown(file + ".new", bob, bob) == 0 && rename(file + ".new", file) == 0)
        let src: JSONValue = ["collection": .string("u\(eve)"), "key": "src"]
        let put = MethodTable.call(
            "object.put", ["collection": src["collection"]!, "key": "src", "value": ["n": 1]], e)
        #expect((try? put.get()) != nil)
        // And Bob's own put again registers the file there now.
        let again = MethodTable.call(
            "object.put", ["collection": holder["collection"]!, "key": "holder", "value": [:]], b)
        #expect((try? again.get()) != nil)
        var st = stat()
        #expect(stat(file, &st) == 0)
        let row = try MethodTable.call("file.get", ["path": .string(file)], context(store, uid: 0, admin: true)).get()
        #expect(row.result["file"]?["inode"] == .int(Int64(st.st_ino)))
    }

    @Test("a path Eve named while missing: Bob may not name it too; made and named by him later, his file is kept")
    func claimedThenSeenByAnother() throws {
        let (store, root) = try openStore()
        defer { store.close() }
        let shared = shared(root)
        let claimed = shared + "/new/x.mp4"
        #expect(try addEdge(claimed, context(store, uid: eve)) == nil)
        let b = context(store, uid: bob)
        let holder: JSONValue = ["collection": .string("u\(bob)"), "key": "holder"]
        _ = try MethodTable.call("object.put", ["collection": holder["collection"]!, "key": "holder", "value": [:]], b)
            .get()
        let bobsEdge: JSONValue = ["name": "keep", "source": holder, "destination": ["file": .string(claimed)]]
        guard case .failure(let refused) = MethodTable.call("edge.add", bobsEdge, b) else {
            Issue.record("Bob named the path Eve claimed while it is not there")
            return
        }
        #expect(refused.stableCode == "permission_denied")
        mkdir(shared + "/new", uid: bob)
        #expect(FileManager.default.createFile(atPath: claimed, contents: Data("bob".utf8)))
        #expect(chown(claimed, bob, bob) == 0)
        _ = try MethodTable.call("edge.add", bobsEdge, b).get()  // there now, his own: he may
        _ = try MethodTable.call("edge.remove", bobsEdge, b).get()
        try deleteEvesSource(store)
        #expect(FileManager.default.fileExists(atPath: claimed), "seen by Bob's look, not Eve's: her claim stands")
    }

    @Test(
        "Eve's file gone by an admin's look, Bob's folder swapped in (and an admin's look again): his file is kept",
        arguments: [false, true])
    func goneByAnAdminsLook(looksAgain: Bool) throws {
        let (store, root) = try openStore()
        defer { store.close() }
        store.enforceOwnership = true
        let shared = shared(root)
        let evesFile = try twoFolders(shared)
        #expect(try addEdge(evesFile, context(store, uid: eve)) == nil)
        #expect(unlink(evesFile) == 0)
        try adminPutsEves(store)
        swapBobIn(shared)
        if looksAgain { try adminPutsEves(store) }
        try deleteEvesSource(store)
        #expect(FileManager.default.fileExists(atPath: evesFile), "Bob's file, now at Eve's path, is kept")
    }

    @Test("a claim whose claimant let go: the holder's own look clears it, and its rule unlinks the file")
    func staleClaim() throws {
        let (store, root) = try openStore()
        defer { store.close() }
        let shared = shared(root)
        let claimed = shared + "/new/x.mp4"
        let e = context(store, uid: eve)
        #expect(try addEdge(claimed, e) == nil)
        mkdir(shared + "/new", uid: bob)
        #expect(FileManager.default.createFile(atPath: claimed, contents: Data("bob".utf8)))
        #expect(chown(claimed, bob, bob) == 0)
        let b = context(store, uid: bob)
        let holder: JSONValue = ["collection": .string("u\(bob)"), "key": "holder"]
        let put: JSONValue = ["collection": holder["collection"]!, "key": "holder", "value": [:]]
        _ = try MethodTable.call("object.put", put, b).get()
        let bobsEdge: JSONValue = [
            "name": "e", "source": holder, "destination": ["file": .string(claimed)],
            "rules": ["deleteDestinationIfSourceDeleted"],
        ]
        _ = try MethodTable.call("edge.add", bobsEdge, b).get()
        let evesEdge: JSONValue = [
            "name": "e", "source": ["collection": .string("u\(eve)"), "key": "src"],
            "destination": ["file": .string(claimed)],
        ]
        _ = try MethodTable.call("edge.remove", evesEdge, e).get()
        _ = try MethodTable.call("object.put", put, b).get()  // his look, Eve's claim gone with her edge
        _ = try MethodTable.call("object.delete", holder, b).get()
        _ = try store.sweep()
        #expect(!FileManager.default.fileExists(atPath: claimed), "Bob's own rule unlinks his file")
    }

    @Test("a claim that cannot be read: nothing is unlinked")
    func unreadableClaim() throws {
        let (store, root) = try openStore()
        defer { store.close() }
        let shared = shared(root)
        mkdir(shared + "/eve", uid: eve)
        let file = shared + "/eve/x.mp4"
        #expect(FileManager.default.createFile(atPath: file, contents: Data("eve".utf8)))
        #expect(chown(file, eve, eve) == 0)
        #expect(try addEdge(file, context(store, uid: eve)) == nil)
        try store.write { tx in try tx.db.execute(sql: "UPDATE file SET claim = 'garbage'") }
        try deleteEvesSource(store)
        #expect(FileManager.default.fileExists(atPath: file))
    }

    @Test("verify --repair of an unreferenced claimed row: the file its claim does not cover is kept")
    func repairUnreferencedClaimed() throws {
        let (store, root) = try openStore()
        defer { store.close() }
        let shared = shared(root)
        let claimed = shared + "/new/x.mp4"
        #expect(try addEdge(claimed, context(store, uid: eve)) == nil)
        mkdir(shared + "/new", uid: bob)
        #expect(FileManager.default.createFile(atPath: claimed, contents: Data("bob".utf8)))
        #expect(chown(claimed, bob, bob) == 0)
        // Seen by an admin's explicit look (the claim stays), then left without edges.
        let admin = context(store, uid: 0, admin: true)
        _ = try MethodTable.call(
            "object.put", ["collection": "a", "key": "k", "value": ["file": .string(claimed)]], admin
        ).get()
        try store.write { tx in try tx.db.execute(sql: "DELETE FROM edge WHERE is_file = 1") }
        var options = VerifyOptions()
        options.repair = true
        _ = try store.verify(options)
        _ = try store.sweep()
        #expect(FileManager.default.fileExists(atPath: claimed), "Bob's file in Bob's folder is kept")
    }

    @Test("Eve's file named in her value, Bob's folder swapped in, an admin puts her object again: Bob's file is kept")
    func adminPutsTheSameValueAfterSwap() throws {
        let (store, root) = try openStore()
        defer { store.close() }
        let shared = shared(root)
        let evesFile = try twoFolders(shared)
        #expect(put(evesFile, context(store, uid: eve), key: "src") == nil)
        swapBobIn(shared)
        let params: JSONValue = [
            "collection": .string("u\(eve)"), "key": "src", "value": ["file": .string(evesFile)],
            "owner": .string("u\(eve)"), "metadata": ["note": "admin"],
        ]
        _ = try MethodTable.call("object.put", params, context(store, uid: 0, admin: true)).get()
        try deleteEvesSource(store)
        #expect(FileManager.default.fileExists(atPath: evesFile), "Bob's file, now at Eve's path, is kept")
    }

    @Test("an admin's own file replaced by rename and put again under enforcement: its rule unlinks the new one")
    func adminsOwnReplacedFile() throws {
        let (store, root) = try openStore()
        defer { store.close() }
        store.enforceOwnership = true
        let file = root + "/a.mp4"
        #expect(FileManager.default.createFile(atPath: file, contents: Data("v1".utf8)))
        let admin = context(store, uid: 0, admin: true)
        let holder: JSONValue = ["collection": "svc", "key": "k"]
        let put: JSONValue = ["collection": "svc", "key": "k", "value": [:], "owner": "tenant"]
        _ = try MethodTable.call("object.put", put, admin).get()
        let edge: JSONValue = [
            "name": "e", "source": holder, "destination": ["file": .string(file)],
            "rules": ["deleteDestinationIfSourceDeleted"],
        ]
        _ = try MethodTable.call("edge.add", edge, admin).get()
        #expect(FileManager.default.createFile(atPath: file + ".new", contents: Data("v2".utf8)))
        #expect(rename(file + ".new", file) == 0)
        _ = try MethodTable.call("object.put", put, admin).get()
        _ = try MethodTable.call("object.delete", holder, admin).get()
        _ = try store.sweep()
        #expect(!FileManager.default.fileExists(atPath: file))
    }

    /// How Bob's file, made where Eve's own was in a sticky folder, gets into her row.
    enum StickyWay: CaseIterable { case bobsOwnPut, adminsPut, goneThenMade }

    @Test(
        "Eve's own file in a sticky shared folder, gone, then Bob's there: her rule leaves his",
        arguments: StickyWay.allCases)
    func stickyFolderOtherUsersFile(way: StickyWay) throws {
        let (store, root) = try openStore()
        defer { store.close() }
        let shared = root + "/shared"
        mkdir(shared, uid: 0, mode: 0o1777)
        let path = shared + "/report.pdf"
        func make(_ uid: UInt32) {
            #expect(
                FileManager.default.createFile(atPath: path, contents: Data("\(uid)".utf8))
                    && chown(path, uid, uid) == 0)
        }
        make(eve)
        #expect(try addEdge(path, context(store, uid: eve)) == nil)  // her own file: she may
        #expect(unlink(path) == 0)
        if way == .goneThenMade { try adminPutsEves(store) }
        make(bob)
        switch way {
        case .bobsOwnPut:
            let b = context(store, uid: bob)
            let holder: JSONValue = ["collection": .string("u\(bob)"), "key": "holder"]
            _ = try MethodTable.call(
                "object.put", ["collection": holder["collection"]!, "key": "holder", "value": [:]], b
            )
            .get()
            let edge: JSONValue = ["name": "keep", "source": holder, "destination": ["file": .string(path)]]
            _ = try MethodTable.call("edge.add", edge, b).get()  // his own file: he may
            _ = try MethodTable.call("edge.remove", edge, b).get()
        case .adminsPut: try adminPutsEves(store)
        case .goneThenMade: break
        }
        try deleteEvesSource(store)
        #expect(FileManager.default.fileExists(atPath: path), "Bob's file is not Eve's to unlink")
    }

    @Test("a claimed row deleted while its root is not the pinned folder: its unlink waits, then goes")
    func rootMovedAtDelete() throws {
        let (store, root) = try openStore()
        defer { store.close() }
        let shared = shared(root)
        let evesFile = try folder(shared, "eve", uid: eve, gid: eve, mode: 0o755, fileOwner: eve)
        #expect(try addEdge(evesFile, context(store, uid: eve)) == nil)
        #expect(rename(root, root + ".real") == 0 && Glibc.mkdir(root, 0o755) == 0)
        try deleteEvesSource(store)
        #expect(FileManager.default.fileExists(atPath: root + ".real/shared/eve/x.mp4"))
        #expect(rmdir(root) == 0 && rename(root + ".real", root) == 0)
        _ = try store.sweep(retryFailed: true)
        #expect(!FileManager.default.fileExists(atPath: evesFile), "kept queued while the root was away")
    }

    @Test("Bob's file seen by an admin's look at Eve's path, the path empty as her rule runs, his folder back: kept")
    func absentAtDeleteAfterAdminLook() throws {
        let (store, root) = try openStore()
        defer { store.close() }
        let shared = shared(root)
        let evesFile = try twoFolders(shared)
        #expect(try addEdge(evesFile, context(store, uid: eve)) == nil)
        swapBobIn(shared)
        try adminPutsEves(store)
        // Nothing at the path as her rule runs (the walk cannot tell), Bob's folder back for the sweep.
        #expect(rename(shared + "/eve", shared + "/bob-away") == 0)
        let src: JSONValue = ["collection": .string("u\(eve)"), "key": "src"]
        _ = try MethodTable.call("object.delete", src, context(store, uid: eve)).get()
        #expect(rename(shared + "/bob-away", shared + "/eve") == 0)
        _ = try store.sweep()
        #expect(FileManager.default.fileExists(atPath: evesFile), "Bob's file, at Eve's path again, is kept")
    }

    @Test("Eve's file, now only Bob's other name of it, at her path once her rule ran on nothing there: kept")
    func recordedInodeUnderAnotherName() throws {
        let (store, root) = try openStore()
        defer { store.close() }
        let shared = shared(root)
        let evesFile = try folder(shared, "eve", uid: eve, gid: eve, mode: 0o755, fileOwner: eve)
        mkdir(shared + "/bob", uid: bob)
        #expect(try addEdge(evesFile, context(store, uid: eve)) == nil)
        #expect(link(evesFile, shared + "/bob/x.mp4") == 0)  // Bob's own name of it
        #expect(unlink(evesFile) == 0)  // nothing at her path as her rule runs
        let src: JSONValue = ["collection": .string("u\(eve)"), "key": "src"]
        _ = try MethodTable.call("object.delete", src, context(store, uid: eve)).get()
        swapBobIn(shared)
        _ = try store.sweep()
        #expect(FileManager.default.fileExists(atPath: evesFile), "Bob's name of the file is kept")
    }
}
