// With enforce_ownership a non-admin names a file (in a put's value or edge.add) only if it
// could unlink it itself, or create it where it is missing: the daemon, as root, may unlink it
// later for that client's rules. Judged on the folder the probe opened, not one renamed in for
// a check. Run in process with callers of other uids (as LeaseMethodTests), on files in
// folders chowned to them (the tests run as root, or are skipped).

@testable import AssetDaemon
@testable import AssetStore
import AssetStoreTestSupport
import ControlProtocol
import Foundation
import Testing

@Suite(.serialized, .enabled(if: getuid() == 0, "needs root to chown folders to other uids"))
struct FileAccessTests: FileAccessSuite {
    let folders = TempFolders(prefix: "assetd-fileaccess-")
    let bob: UInt32 = 1001
    let eve: UInt32 = 1002

    @Test("a non-admin may not name another's file in a folder it cannot write; its owner, an admin may")
    func otherUsersFolder() throws {
        let (store, root) = try openStore()
        defer { store.close() }
        let file = try folder(root, "bob", uid: bob, gid: bob, mode: 0o755, fileOwner: bob)
        #expect(put(file, context(store, uid: eve)) == "permission_denied")
        #expect(try addEdge(file, context(store, uid: eve)) == "permission_denied")
        #expect(try !registered(store, file), "the refused calls registered the file")
        // A file not there yet is judged on its folder, or the nearest one that exists.
        let folder = (file as NSString).deletingLastPathComponent
        #expect(put(folder + "/new.mp4", context(store, uid: eve)) == "permission_denied")
        #expect(try addEdge(folder + "/sub/new.mp4", context(store, uid: eve)) == "permission_denied")
        let own = try self.folder(root, "eve", uid: eve, gid: eve, mode: 0o755, fileOwner: eve)
        #expect(put((own as NSString).deletingLastPathComponent + "/sub/new.mp4", context(store, uid: eve)) == nil)
        #expect(put(file, context(store, uid: eve, enforce: false)) == nil, "without enforce_ownership")
        #expect(put(file, context(store, uid: bob)) == nil)
        #expect(put(file, context(store, uid: 0, admin: true), key: "admin") == nil)
        #expect(FileManager.default.fileExists(atPath: file))
    }

    @Test("a group-writable folder lets the group's members in, no one else")
    func groupWritable() throws {
        let (store, root) = try openStore()
        defer { store.close() }
        let file = try folder(root, "shared", uid: 0, gid: 1500, mode: 0o775, fileOwner: bob)
        #expect(put(file, context(store, uid: eve)) == "permission_denied")
        #expect(put(file, context(store, uid: eve, gids: [eve, 1500])) == nil)
    }

    @Test("in a sticky folder only the file's or the folder's owner may name the file")
    func sticky() throws {
        let (store, root) = try openStore()
        defer { store.close() }
        let file = try folder(root, "tmp", uid: 0, gid: 0, mode: 0o1777, fileOwner: bob)
        #expect(put(file, context(store, uid: eve)) == "permission_denied")
        #expect(try addEdge(file, context(store, uid: eve)) == "permission_denied")
        #expect(put(root + "/tmp/new.mp4", context(store, uid: eve)) == "permission_denied")
        #expect(put(file, context(store, uid: bob)) == nil)
    }

    @Test("Eve's folder renamed in for a check by path and Bob's back for the probe: Bob's folder is judged")
    func folderSwappedBack() throws {
        let (store, root) = try openStore()
        defer { store.close() }
        // Not sticky: Eve may rename the folders in it (not unlink Bob's file in his).
        #expect(chmod(root, 0o777) == 0)
        let file = try folder(root, "bob", uid: bob, gid: bob, mode: 0o755, fileOwner: bob)
        _ = try folder(root, "eve", uid: eve, gid: eve, mode: 0o755, fileOwner: eve)
        let swap: @Sendable () -> Void = {
            #expect(rename(root + "/bob", root + "/t") == 0 && rename(root + "/eve", root + "/bob") == 0)
            #expect(rename(root + "/t", root + "/eve") == 0)
        }
        swap()  // Eve's folder, with her own x.mp4, at Bob's path as the call starts,
        let eve = self.eve
        FileProbe.stepHooks.withLock {
            $0[root] = { step in
                // and Bob's back once the probe starts looking.
                var s = stat()
                if step == root, stat(root + "/bob", &s) == 0, s.st_uid == eve { swap() }
            }
        }
        FileProbe.anyStepHook.store(true, ordering: .relaxed)
        defer { FileProbe.stepHooks.withLock { $0[root] = nil } }
        #expect(put(file, context(store, uid: eve)) == "permission_denied")
        #expect(try !registered(store, file))
    }

    @Test("in a folder with an access ACL only the folder's owner may name files")
    func accessACL() throws {
        let (store, root) = try openStore()
        defer { store.close() }
        let file = try folder(root, "acl", uid: bob, gid: bob, mode: 0o777, fileOwner: bob)
        let dir = (file as NSString).deletingLastPathComponent
        // Writable by all by its mode bits, but an entry keeps Eve out: owner, user eve ---,
        // group, mask and other rwx (the xattr's layout: version 2, then tag, perm, id each).
        var acl = [UInt8]()
        func append<T: FixedWidthInteger>(_ v: T) { withUnsafeBytes(of: v.littleEndian) { acl += $0 } }
        append(UInt32(2))
        for (tag, perm, id) in [(1, 7, UInt32.max), (2, 0, eve), (4, 7, .max), (0x10, 7, .max), (0x20, 7, .max)] {
            append(UInt16(tag))
            append(UInt16(perm))
            append(id)
        }
        // setxattr, which the Glibc module does not export. A file system without ACLs has
        // nothing to test.
        typealias SetXattr =
            @convention(c) (
                UnsafePointer<CChar>, UnsafePointer<CChar>, UnsafeRawPointer, Int, Int32
            ) -> Int32
        let setxattr = unsafeBitCast(try #require(dlsym(nil, "setxattr")), to: SetXattr.self)
        guard setxattr(dir, "system.posix_acl_access", acl, acl.count, 0) == 0 else {
            // Only a file system without ACLs may skip it; any other failure is the test's.
            let e = errno
            if e != EOPNOTSUPP { Issue.record("setxattr of an ACL failed: \(String(cString: strerror(e)))") }
            return
        }
        #expect(put(file, context(store, uid: eve)) == "permission_denied")
        #expect(put(dir + "/new.mp4", context(store, uid: eve)) == "permission_denied")
        #expect(put(file, context(store, uid: bob)) == nil)
    }

    @Test("another name of Bob's file in Eve's own folder may not be named by Eve")
    func hardLink() throws {
        let (store, root) = try openStore()
        defer { store.close() }
        let file = try folder(root, "shared", uid: 0, gid: 0, mode: 0o777, fileOwner: bob)
        let own = try folder(root, "eve", uid: eve, gid: eve, mode: 0o755, fileOwner: eve)
        let other = (own as NSString).deletingLastPathComponent + "/link.mp4"
        #expect(link(file, other) == 0)
        #expect(put(other, context(store, uid: eve)) == "permission_denied")
        #expect(put(own, context(store, uid: eve)) == nil)
    }

    @Test("Bob's folder renamed in before a later put of Eve's object: its re-read is judged, Bob's file kept")
    func swappedBeforeRefresh() throws {
        let (store, root) = try openStore()
        defer { store.close() }
        let shared = root + "/shared"
        try FileManager.default.createDirectory(atPath: shared, withIntermediateDirectories: false)
        #expect(chmod(shared, 0o777) == 0)  // anyone may rename folders in it: no sticky bit
        let evesFile = try folder(shared, "eve", uid: eve, gid: eve, mode: 0o755, fileOwner: eve)
        let bobsFile = try folder(shared, "bob", uid: bob, gid: bob, mode: 0o755, fileOwner: bob)
        let e = context(store, uid: eve)
        #expect(try addEdge(evesFile, e) == nil)
        // Bob's folder where Eve's was, then her object put again without naming the file.
        #expect(rename(shared + "/eve", shared + "/eve-away") == 0 && rename(shared + "/bob", shared + "/eve") == 0)
        let src: JSONValue = ["collection": .string("u\(eve)"), "key": "src"]
        _ = try MethodTable.call(
            "object.put", ["collection": src["collection"]!, "key": "src", "value": ["n": 1]], e
        ).get()
        _ = try MethodTable.call("object.delete", src, e).get()
        _ = try store.sweep()
        #expect(FileManager.default.fileExists(atPath: evesFile), "Bob's file, now at Eve's path, is kept")
        #expect(!FileManager.default.fileExists(atPath: bobsFile))  // moved, not removed
    }
}
