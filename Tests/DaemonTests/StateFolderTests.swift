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

    /// A configuration file of `mode` in a folder of `folderMode` (made by this test).
    func configFile(_ mode: mode_t, in folderMode: mode_t = 0o755) throws -> DaemonConfig {
        let dir = try temp.make() + "/etc"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        let file = dir + "/assetd.toml"
        try "".write(toFile: file, atomically: false, encoding: .utf8)
        try #require(chmod(file, mode) == 0 && chmod(dir, folderMode) == 0)
        var config = DaemonConfig.embeddedDefaults(uid: getuid(), environment: [:])
        config.sourcePath = file
        return config
    }

    @Test("a configuration file others may write, or replace through its folder, is refused")
    func writableConfigFile() throws {
        try configFile(0o644).checkConfigFile()
        try configFile(0o600, in: 0o700).checkConfigFile()
        let written = #expect(throws: ConfigError.self) { try configFile(0o666).checkConfigFile() }
        #expect(written?.message.contains("writable by its group or others (mode 666)") == true)
        #expect(throws: ConfigError.self) { try configFile(0o644, in: 0o777).checkConfigFile() }
        // A sticky folder others may write (NixOS's /nix/store is 1775): they cannot rename the file.
        try configFile(0o644, in: 0o1777).checkConfigFile()
        try configFile(0o444, in: 0o1775).checkConfigFile()
        // Through a symlink in a private folder, to a file in a folder others may write.
        let linked = try configFile(0o644, in: 0o777)
        let dir = try temp.make()
        try #require(symlink(linked.sourcePath!, dir + "/assetd.toml") == 0)
        var config = linked
        config.sourcePath = dir + "/assetd.toml"
        #expect(throws: ConfigError.self) { try config.checkConfigFile() }
    }

    @Test(
        "a configuration file of another user is refused: it could make itself an admin",
        .enabled(if: getuid() == 0, "needs chown"))
    func foreignConfigFile() throws {
        let config = try configFile(0o644)
        try #require(chown(config.sourcePath!, 65534, 65534) == 0)
        let error = #expect(throws: ConfigError.self) { try config.checkConfigFile(uid: 0) }
        #expect(error?.message.contains("belongs to user 65534") == true)
        try config.checkConfigFile(uid: 65534)  // that user's own daemon
        // In a sticky folder others may write, another user's file is theirs to rename.
        let sticky = try configFile(0o644, in: 0o1777)
        try #require(chown(sticky.sourcePath!, 65534, 65534) == 0)
        #expect(throws: ConfigError.self) { try sticky.checkConfigFile(uid: 0) }
    }
}
