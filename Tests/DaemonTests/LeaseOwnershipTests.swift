// With enforce_ownership a non-admin leases only objects it owns (or that are not there yet),
// and files an object of its own holds or that it could unlink (or create) itself: a lease of
// Bob's file by Eve, renewed before it lapsed, would keep his deleted file's unlink back for
// ever. Run in process with callers of other uids (as FileAccessTests); the files on folders
// chowned to them, so as root, the objects anywhere.

@testable import AssetDaemon
@testable import AssetStore
import AssetStoreTestSupport
import ControlProtocol
import Foundation
import Testing

@Suite("lease ownership of objects, and the order of its errors")
struct LeaseObjectOwnershipTests: FileAccessSuite {
    let folders = TempFolders(prefix: "assetd-leaseobjects-")
    let bob: UInt32 = 1001
    let eve: UInt32 = 1002

    @Test("Eve may not lease Bob's object; Bob leases his own and one not there yet")
    func objects() throws {
        let (store, _) = try openStore()
        defer { store.close() }
        try call("object.put", ["collection": "u1001", "key": "o", "value": [:]], context(store, uid: bob))
        let eve = connection(store, uid: eve)
        #expect(lease(eve, objects: [("u1001", "o")]) == "permission_denied")
        try call("object.put", ["collection": "u1002", "key": "e", "value": [:]], eve)
        #expect(lease(eve, objects: [("u1002", "e"), ("u1001", "o")]) == "permission_denied")
        #expect(store.leases.active().isEmpty)
        #expect(lease(connection(store, uid: bob), objects: [("u1001", "o"), ("u1001", "later")]) == nil)
    }

    @Test("a lease wrong in itself is invalid_params before it is permission_denied")
    func paramsFirst() throws {
        let (store, _) = try openStore()
        defer { store.close() }
        try call("object.put", ["collection": "u1001", "key": "o", "value": [:]], context(store, uid: bob))
        let eve = connection(store, uid: eve)
        for ttl: JSONValue in ["2d", "0s"] {
            #expect(lease(eve, objects: [("u1001", "o")], ttl: ttl) == "invalid_params")
        }
        #expect(lease(eve, ttl: "1h") == "invalid_params")  // nothing to lease
    }
}

@Suite(.serialized, .enabled(if: getuid() == 0, "needs root to chown folders to other uids"))
struct LeaseOwnershipTests: FileAccessSuite {
    let folders = TempFolders(prefix: "assetd-leaseowners-")
    let bob: UInt32 = 1001
    let eve: UInt32 = 1002

    /// Bob's object holding his file, 0600 in his 0700 folder, and that file.
    private func bobsFile(_ store: Store, _ root: String) throws -> String {
        let file = try folder(root, "bob", uid: bob, gid: bob, mode: 0o700, fileOwner: bob)
        #expect(chmod(file, 0o600) == 0)
        #expect(put(file, context(store, uid: bob)) == nil)
        return file
    }

    @Test("Eve may not lease Bob's file or object; his delete then unlinks the file")
    func othersRefused() throws {
        let (store, root) = try openStore()
        defer { store.close() }
        let file = try bobsFile(store, root)
        let eve = connection(store, uid: eve)
        #expect(lease(eve, files: [file]) == "permission_denied")
        #expect(lease(eve, objects: [("u1001", "o")]) == "permission_denied")
        // A lease naming her own object too is refused whole.
        try call("object.put", ["collection": "u1002", "key": "e", "value": [:]], eve)
        #expect(lease(eve, files: [file], objects: [("u1002", "e")]) == "permission_denied")
        #expect(store.leases.active().isEmpty)
        try call("object.delete", ["collection": "u1001", "key": "o"], context(store, uid: bob))
        let report = try store.sweep()
        #expect(report.unlinked == [file] && report.deferred.isEmpty)
        #expect(!FileManager.default.fileExists(atPath: file))
    }

    @Test("a non-admin leases its own objects, ones not there yet, files its objects hold, and its own")
    func ownGranted() throws {
        let (store, root) = try openStore()
        defer { store.close() }
        let file = try bobsFile(store, root)
        let bob = connection(store, uid: bob)
        #expect(lease(bob, files: [file], objects: [("u1001", "o"), ("u1001", "later")]) == nil)
        // Eve's file, in her folder, held by her object; Bob's object holding it too gives her no lease of his.
        let own = try folder(root, "eve", uid: eve, gid: eve, mode: 0o755, fileOwner: eve)
        #expect(put(own, context(store, uid: eve), key: "e") == nil)
        #expect(lease(connection(store, uid: eve), files: [own], objects: [("u1002", "e")]) == nil)
        #expect(store.leases.isLeased(file: file) && store.leases.isLeased(file: own))
        // A file in her own folder that only another owner's object holds now: hers to unlink,
        // but a lease of it would keep that object from eviction.
        #expect(put(own, context(store, uid: 0, admin: true), key: "admin") == nil)
        try call("object.put", ["collection": "u1002", "key": "e", "value": [:]], context(store, uid: eve))
        #expect(lease(connection(store, uid: eve), files: [own]) == "permission_denied")
    }

    @Test("a non-admin leases a file no object holds only if it could unlink or create it itself")
    func unregisteredFiles() throws {
        let (store, root) = try openStore()
        defer { store.close() }
        let eve = connection(store, uid: eve)
        // A file a player uses, and a download being written, in her own folder.
        let own = try folder(root, "eve", uid: self.eve, gid: self.eve, mode: 0o755, fileOwner: self.eve)
        let download = root + "/eve/next.part"
        #expect(lease(eve, files: [own]) == nil)
        #expect(lease(eve, files: [download]) == nil)
        #expect(store.leases.isLeased(file: own) && store.leases.isLeased(file: download))
        // Bob's file in his 0700 folder, and one not there yet in it; one in a sticky folder.
        let bobs = try folder(root, "bob", uid: bob, gid: bob, mode: 0o700, fileOwner: bob)
        let sticky = try folder(root, "tmp", uid: 0, gid: 0, mode: 0o1777, fileOwner: bob)
        for file in [bobs, root + "/bob/next.part", sticky] {
            #expect(lease(eve, files: [file]) == "permission_denied", "\(file)")
            #expect(!store.leases.isLeased(file: file))
        }
        // Refused whole, with a file of her own.
        #expect(lease(eve, files: [root + "/eve/other.part", bobs]) == "permission_denied")
        #expect(!store.leases.isLeased(file: root + "/eve/other.part"))
    }

    @Test("admins, and everyone without enforce_ownership, lease any object and file as before")
    func adminsAndUnenforced() throws {
        let (store, root) = try openStore()
        defer { store.close() }
        let file = try bobsFile(store, root)
        #expect(lease(connection(store, uid: 0, admin: true), files: [file], objects: [("u1001", "o")]) == nil)
        #expect(lease(connection(store, uid: eve, enforce: false), files: [file], objects: [("u1001", "o")]) == nil)
        // An unregistered path in root's folder, to a non-admin under enforce_ownership: not hers to create.
        #expect(lease(connection(store, uid: eve), files: [root + "/none"]) == "permission_denied")
    }
}

extension FileAccessSuite {
    /// `uid`'s context on its own connection.
    func connection(
        _ store: Store, uid: UInt32, admin: Bool = false, enforce: Bool = true
    ) -> MethodContext {
        var ctx = context(store, uid: uid, admin: admin, enforce: enforce)
        ctx.connection = UInt64(uid) + 1
        return ctx
    }

    /// The stable code of a lease of `files` and `objects` by `ctx`, nil when granted.
    func lease(
        _ ctx: MethodContext, files: [String] = [], objects: [(String, String)] = [], ttl: JSONValue = "1d"
    ) -> String? {
        let params: JSONValue = [
            "files": .array(files.map { .string($0) }),
            "objects": .array(objects.map { ["collection": .string($0.0), "key": .string($0.1)] }),
            "ttl": ttl,
        ]
        guard case .failure(let e) = MethodTable.call("lease.acquire", params, ctx) else { return nil }
        return e.stableCode
    }

    func call(_ method: String, _ params: JSONValue, _ ctx: MethodContext) throws {
        _ = try MethodTable.call(method, params, ctx).get()
    }
}
