// The database's and the socket's folders: assetd makes files there as root, so a folder
// another user may write (sticky or not) or own is refused at start and by --check-config.

import Foundation
import Glibc
import Testing
@testable import AssetService
import AssetStoreTestSupport

@Suite struct StateFolderTests {
    let temp = TempFolders(prefix: "assetd-state-folder")

    /// A database path in a folder of `mode` (made by this test, so its owner's).
    func database(in mode: mode_t) throws -> String {
        let dir = try temp.make()
        try FileManager.default.createDirectory(atPath: dir + "/state", withIntermediateDirectories: true)
        try #require(chmod(dir + "/state", mode) == 0)
        return dir + "/state/assetd.sqlite"
    }

    @Test("a database folder others may write is refused, sticky too; a private one and one not made yet pass")
    func writableFolder() throws {
        for mode: mode_t in [0o777, 0o1777, 0o1733] {
            let why = RootHygiene.unsafeHome(of: try database(in: mode), uid: getuid(), privateGroup: { _, _ in false })
            #expect(why?.contains("writable by its group or others") == true, "\(String(describing: why))")
        }
        #expect(RootHygiene.unsafeHome(of: try database(in: 0o700), uid: getuid()) == nil)
        let later = try temp.make() + "/not/yet/assetd.sqlite"
        #expect(RootHygiene.unsafeHome(of: later, uid: getuid()) == nil)
        let shared = RootHygiene.unsafeHome(of: try database(in: 0o770), uid: getuid(), privateGroup: { _, _ in false })
        #expect(shared?.contains("mode 770") == true, "\(String(describing: shared))")
        #expect(
            RootHygiene.unsafeHome(of: try database(in: 0o770), uid: getuid(), privateGroup: { _, _ in true }) == nil)
    }

    @Test("a database with a second name (a hard link) is a configuration error, not a failed start")
    func hardLinkedDatabase() throws {
        let path = try database(in: 0o700)
        try "".write(toFile: path, atomically: false, encoding: .utf8)
        var config = DaemonConfig.embeddedDefaults(uid: getuid(), environment: [:])
        config.storePath = path
        try config.checkStateFolders()
        #expect(link(path, path + ".snapshot") == 0)
        #expect(throws: ConfigError.self) { try config.checkStateFolders() }
    }

    @Test(
        "a database folder another user owns is refused, and so is the configuration naming it",
        .enabled(if: getuid() == 0, "needs chown"))
    func foreignFolder() throws {
        let path = try database(in: 0o755)
        let folder = (path as NSString).deletingLastPathComponent
        try #require(chown(folder, 65534, 65534) == 0)
        #expect(RootHygiene.unsafeHome(of: path, uid: 0)?.contains("belongs to user 65534") == true)
        var config = DaemonConfig.embeddedDefaults(uid: 0, environment: [:])
        config.storePath = path
        #expect(throws: ConfigError.self) { try config.checkStateFolders(uid: 0) }
        config.storePath = try database(in: 0o700)
        config.socketPath = folder + "/control.sock"
        #expect(throws: ConfigError.self) { try config.checkStateFolders(uid: 0) }
    }
}
