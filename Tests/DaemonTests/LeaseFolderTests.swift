// A lease names files: a path that is a folder, a symlink or a device is refused with
// not_a_regular_file, as a put naming it is, for admins and non-admins alike (a lease of a
// folder protects nothing under it; the unlinks take regular files only). In process.

@testable import AssetDaemon
@testable import AssetStore
import AssetStoreTestSupport
import ControlProtocol
import Foundation
import Testing

@Suite(.serialized)
struct LeaseFolderTests: FileAccessSuite {
    let folders = TempFolders(prefix: "assetd-leasefolder-")
    let bob: UInt32 = 1001
    let eve: UInt32 = 1002

    @Test("an admin's, or anyone's without enforce_ownership, lease of a folder or a symlink is not_a_regular_file")
    func admins() throws {
        let (store, root) = try openStore()
        defer { store.close() }
        try FileManager.default.createDirectory(atPath: root + "/sub", withIntermediateDirectories: false)
        #expect(FileManager.default.createFile(atPath: root + "/sub/a.bin", contents: Data("a".utf8)))
        #expect(symlink(root + "/sub/a.bin", root + "/link") == 0)
        for ctx in [connection(store, uid: 0, admin: true), connection(store, uid: eve, enforce: false)] {
            for path in [root + "/sub", root + "/link"] {
                #expect(lease(ctx, files: [path]) == "not_a_regular_file", "\(path)")
                #expect(lease(ctx, files: [root + "/sub/a.bin", path]) == "not_a_regular_file", "\(path)")
            }
            // A file, and one not there yet, as before.
            #expect(lease(ctx, files: [root + "/sub/a.bin", root + "/sub/next.part"]) == nil)
        }
        #expect(!store.leases.isLeased(file: root + "/sub") && !store.leases.isLeased(file: root + "/link"))
    }

    @Test(
        "a non-admin's lease of a folder is not_a_regular_file, where its object holds the path too",
        .enabled(if: getuid() == 0, "needs root to chown a folder to another uid"))
    func nonAdmins() throws {
        let (store, root) = try openStore()
        defer { store.close() }
        let file = try folder(root, "eve", uid: eve, gid: eve, mode: 0o755, fileOwner: eve)
        let eve = connection(store, uid: self.eve)
        #expect(lease(eve, files: [root + "/eve"]) == "not_a_regular_file")
        // Her object holds the path; a folder is made there since.
        #expect(put(file, context(store, uid: self.eve)) == nil)
        #expect(unlink(file) == 0 && mkdir(file, 0o755) == 0)
        #expect(lease(eve, files: [file]) == "not_a_regular_file")
        #expect(!store.leases.isLeased(file: file))
    }
}
