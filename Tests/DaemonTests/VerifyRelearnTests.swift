// verify's look at registered files that are not the ones recorded, and relearn's refusals,
// on a store in this process (assetd(8), "The unlink queue"): a victim's file brought to a
// registered path by renaming folders in a folder others may write is not adopted, a user's
// claim that covers the file there is no problem, a claimed row is never relearned, a folder
// turned into a symlink as relearn looks is refused, and files of removed roots are grouped
// and capped. The unlinks run in `sweep`, so nothing waits.

@testable import AssetDaemon
@testable import AssetStore
import AssetStoreTestSupport
import ControlProtocol
import Foundation
import Synchronization
import Testing

@Suite(.serialized, .enabled(if: getuid() == 0, "needs root to chown folders to other uids"))
struct VerifyRelearnTests: FileAccessSuite {
    let folders = TempFolders(prefix: "assetd-relearn-")
    let bob: UInt32 = 1001
    let eve: UInt32 = 1002

    private func admin(_ store: Store) -> MethodContext { context(store, uid: 0, admin: true) }

    /// verify as an admin; with `relearn`, a repair that relearns below that root.
    private func verify(_ store: Store, relearn root: String? = nil) throws -> JSONValue {
        var params: JSONValue = [:]
        if let root { params = ["repair": true, "relearn": .string(root)] }
        return try MethodTable.call("verify", params, admin(store)).get().result
    }

    private func changed(_ r: JSONValue, _ path: String) -> JSONValue? {
        (r["problems"]?.arrayValue ?? []).first {
            $0["kind"] == "identity_changed" && $0["subject"]?["path"] == .string(path)
        }
    }

    /// An admin's object `c/k` holding `file`.
    private func adminPut(_ store: Store, _ file: String) throws {
        let params: JSONValue = ["collection": "c", "key": "k", "value": ["file": .string(file)]]
        _ = try MethodTable.call("object.put", params, admin(store)).get()
    }

    private func adminDelete(_ store: Store) throws {
        _ = try MethodTable.call("object.delete", ["collection": "c", "key": "k"], admin(store)).get()
        _ = try store.sweep()
    }

    @Test("relearn refuses a victim's file renamed to the path through a folder anyone may write; a delete keeps it")
    func swappedFoldersNotAdopted() throws {
        let (store, root) = try openStore()
        defer { store.close() }
        let shared = root + "/shared"
        #expect(mkdir(shared, 0o777) == 0 && chmod(shared, 0o777) == 0)
        // Bob (the attacker) has t/x.mp4, Eve (the victim) s/x.mp4, of the same size; Bob gives
        // his own file her modification time, which the owner of a file may set.
        let bobs = try folder(shared, "t", uid: bob, gid: bob, mode: 0o755, fileOwner: bob)
        let eves = try folder(shared, "s", uid: eve, gid: eve, mode: 0o755, fileOwner: eve)
        var st = stat()
        #expect(stat(eves, &st) == 0)
        var times = [st.st_atim, st.st_mtim]
        #expect(utimensat(AT_FDCWD, bobs, &times, 0) == 0)
        try adminPut(store, bobs)
        // Bob renames his folder away and hers in its place: anyone may, in `shared`.
        #expect(rename(shared + "/t", shared + "/away") == 0 && rename(shared + "/s", shared + "/t") == 0)
        let r = try verify(store, relearn: root)
        let p = changed(r, bobs)
        #expect(p?["repaired"] == false, "\(r.serialized())")
        #expect(p?["message"]?.stringValue?.contains("writable by others") == true, "\(r.serialized())")
        try adminDelete(store)
        #expect(FileManager.default.fileExists(atPath: bobs), "Eve's file, now at the path, was unlinked")
    }

    @Test("a claimed file its user replaced in her own folder is no problem; one swapped in is, and never relearned")
    func claimedFiles() throws {
        let (store, root) = try openStore()
        defer { store.close() }
        let shared = root + "/shared"
        #expect(mkdir(shared, 0o777) == 0 && chmod(shared, 0o777) == 0)
        let eves = try folder(shared, "eve", uid: eve, gid: eve, mode: 0o755, fileOwner: eve)
        #expect(put(eves, context(store, uid: eve)) == nil)
        // Eve writes her file anew and renames it over the old one: another inode her claim covers.
        let fresh = shared + "/eve/x.new"
        #expect(FileManager.default.createFile(atPath: fresh, contents: Data("movie".utf8)))
        #expect(chown(fresh, eve, eve) == 0 && rename(fresh, eves) == 0)
        let clean = try verify(store)
        #expect(changed(clean, eves) == nil, "\(clean.serialized())")
        // Bob's folder renamed in place of hers: not what her claim covers, and not relearned.
        _ = try folder(shared, "bob", uid: bob, gid: bob, mode: 0o755, fileOwner: bob)
        #expect(rename(shared + "/eve", shared + "/eve-away") == 0 && rename(shared + "/bob", shared + "/eve") == 0)
        let r = try verify(store, relearn: root)
        let p = changed(r, eves)
        #expect(p?["repaired"] == false, "\(r.serialized())")
        #expect(p?["message"]?.stringValue?.contains("a user named it") == true, "\(r.serialized())")
    }

    @Test("a folder turned into a symlink as relearn looks: refused, and the file behind it kept")
    func symlinkAsRelearnLooks() throws {
        let (store, root) = try openStore()
        defer { store.close() }
        let file = try folder(root, "d", uid: 0, gid: 0, mode: 0o755, fileOwner: 0)
        try adminPut(store, file)
        // The file copied in place (another inode, the same size and mtime).
        let copy = try runProcess("/bin/cp", ["-a", file, file + ".copy"])
        #expect(copy.status == 0 && rename(file + ".copy", file) == 0)
        // verify's own look is the first at the root; relearn's, the second, finds d a symlink.
        let looks = Mutex(0)
        FileProbe.stepHooks.withLock {
            $0[root] = { p in
                guard p == root else { return }
                let n = looks.withLock { n in
                    n += 1
                    return n
                }
                guard n == 2 else { return }
                _ = rename(root + "/d", root + "/e")
                _ = symlink(root + "/e", root + "/d")
            }
        }
        FileProbe.anyStepHook.store(true, ordering: .relaxed)
        defer { FileProbe.stepHooks.withLock { $0[root] = nil } }
        let r = try verify(store, relearn: root)
        let p = changed(r, file)
        #expect(p?["repaired"] == false, "\(r.serialized())")
        #expect(p?["message"]?.stringValue?.contains("symlink") == true, "\(r.serialized())")
        try adminDelete(store)
        #expect(FileManager.default.fileExists(atPath: root + "/e/x.mp4"), "the file behind the symlink was unlinked")
    }

    @Test("files of 25 removed roots: 20 groups listed, the rest in one, each counted against the limit")
    func unconfiguredCapped() throws {
        let dir = try folders.make()
        let root = dir + "/root"
        var roots = [root]
        for i in 0..<25 { roots.append(dir + "/r\(i)") }
        for r in roots { try FileManager.default.createDirectory(atPath: r + "/ab", withIntermediateDirectories: true) }
        var store = try Store(path: dir + "/db.sqlite", configuration: StoreConfiguration(roots: roots))
        for (i, r) in roots.dropFirst().enumerated() {
            for shard in ["ab", "cd"] {
                let path = r + "/\(shard)/f"
                try FileManager.default.createDirectory(atPath: r + "/\(shard)", withIntermediateDirectories: true)
                #expect(FileManager.default.createFile(atPath: path, contents: Data("x".utf8)))
                let params: JSONValue = [
                    "collection": "c", "key": .string("k\(i)\(shard)"), "value": ["file": .string(path)],
                ]
                _ = try MethodTable.call("object.put", params, admin(store)).get()
            }
        }
        store.close()
        store = try Store(path: dir + "/db.sqlite", configuration: StoreConfiguration(roots: [root]))
        defer { store.close() }
        let report = try store.verify(VerifyOptions())
        let groups = report.problems.filter { $0.kind == "root_unconfigured" }
        #expect(groups.count == 21, "\(groups.map(\.subject))")
        // Each removed root is one group (its shards merged), of two files.
        #expect(groups.prefix(20).allSatisfy { $0.subject["files"] == 2 && $0.subject["path"] != .null })
        #expect(groups.last?.subject["files"] == 10 && groups.last?.subject["folders"] == 5)
        var options = VerifyOptions()
        options.limit = 3
        let cut = try store.verify(options)
        #expect(cut.problems.count == 3 && cut.found == 21, "\(cut.problems.map(\.kind))")
    }
}
