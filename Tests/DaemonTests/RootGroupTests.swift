// A folder on the way to a root that its group may write is refused, unless that group is
// its owner's private group (umask 002, as RHEL sets up users): nobody else is in it.

import Foundation
import Glibc
import Testing
@testable import AssetService
import AssetStoreTestSupport

@Suite struct RootGroupTests {
    let temp = TempFolders(prefix: "assetd-root-group")

    /// A root below a folder of `mode`, and that folder's (gid, owner).
    func root(below mode: mode_t) throws -> (root: String, gid: gid_t, owner: uid_t) {
        let dir = try temp.make()
        try FileManager.default.createDirectory(atPath: dir + "/grp/root", withIntermediateDirectories: true)
        try #require(chmod(dir + "/grp", mode) == 0)
        var st = stat()
        try #require(stat(dir + "/grp", &st) == 0)
        return (dir + "/grp/root", st.st_gid, st.st_uid)
    }

    @Test("a 0775 folder whose group is its owner's private group is accepted; a shared group is not")
    func privateGroup() throws {
        let r = try root(below: 0o775)
        let isPrivate: (gid_t, uid_t) -> Bool = { $0 == r.gid && $1 == r.owner }
        #expect(RootHygiene.replaceable(r.root, uid: getuid(), privateGroup: isPrivate) == nil)
        let shared = RootHygiene.replaceable(r.root, uid: getuid(), privateGroup: { _, _ in false })
        #expect(
            shared?.contains("is writable by its group or others (mode 775)") == true, "\(String(describing: shared))")
    }

    @Test("a 0777 folder is refused even when its group is private")
    func othersMayWrite() throws {
        let r = try root(below: 0o777)
        let why = RootHygiene.replaceable(r.root, uid: getuid(), privateGroup: { _, _ in true })
        #expect(why?.contains("mode 777") == true, "\(String(describing: why))")
    }
}
