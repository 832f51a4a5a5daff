// The config file (assetd.toml(5)): the keys of each table read with their types, embedded
// defaults, and errors that name the file, line and key.

import AssetStore
import AssetStoreTestSupport
import Foundation
import Testing
@testable import AssetDaemon
@testable import AssetService

@Suite struct ConfigParserTests {
    func parse(_ text: String) throws(ConfigError) -> DaemonConfig {
        let defaults = DaemonConfig.embeddedDefaults(uid: 1000, environment: ["HOME": "/home/u"])
        return try ConfigParser(file: "/etc/assetd/test.toml", text: text).parse(defaults: defaults)
    }

    @Test("the keys of [store], [control], [files], [log], [[collections]] and [[indexes]] are read")
    func everyKey() throws {
        let c = try parse(
            """
            [store]
            path = "/srv/a.sqlite"
            durability = "normal"
            [control]
            socket = "/run/a.sock"
            mode = "0600"
            admin_uids = [1001, 1002]
            admin_groups = ["wheel", 27]
            enforce_ownership = true
            max_request_bytes = "64KiB"
            max_connections = 10
            [files]
            roots = ["/srv/cache", "/srv/media"]
            unlink_delay = "90s"
            orphan_grace = "2h"
            [log]
            level = "debug"
            [[collections]]
            name = "thumbnails"
              [[collections.edges]]
              name = "original"
              field = "originalKey"
              to = "originals"
              rules = ["deleteSourceIfDestinationDeleted"]
            [[indexes]]
            name = "media"
            version = "2026-11-21"
            collections = ["photos"]
            columns = [ { name = "duration", type = "real", path = "$.duration" } ]
            """)
        #expect(c.storePath == "/srv/a.sqlite" && c.durability == .normal)
        #expect(c.socketPath == "/run/a.sock" && c.socketMode == 0o600)
        #expect(c.adminUIDs == [1001, 1002] && c.adminGroups == [.name("wheel"), .gid(27)] && c.enforceOwnership)
        #expect(c.maxRequestBytes == 65_536 && c.maxConnections == 10)
        #expect(c.roots == ["/srv/cache", "/srv/media"] && c.unlinkDelay == 90 && c.orphanGrace == 7200)
        #expect(c.logLevel == .debug)
        #expect(c.templates["thumbnails"]?.first?.rules == .deleteSourceIfDestinationDeleted)
        #expect(c.indexes.map(\.name) == ["media"])
        #expect(c.indexes.first?.collections == ["photos"])
    }

    @Test("an empty file means the embedded defaults for this user")
    func emptyFileDefaults() throws {
        let c = try parse("")
        #expect(c.storePath == "/home/u/.local/state/assetd/assetd.sqlite")
        #expect(c.socketPath == "/home/u/.local/state/assetd/control.sock")
        #expect(c.roots == ["/home/u/.cache/assetd"], "a folder of assetd's own, not every program's cache")
        #expect(c.socketMode == 0o660 && c.maxRequestBytes == 1_048_576 && c.maxConnections == 1024)
        #expect(c.unlinkDelay == 0 && c.orphanGrace == 3600 && c.logLevel == .info && c.durability == .full)
    }

    @Test("embedded defaults follow root, XDG_RUNTIME_DIR and XDG variables")
    func embeddedDefaults() {
        let root = DaemonConfig.embeddedDefaults(uid: 0, environment: [:])
        #expect(root.storePath == "/var/lib/assetd/assetd.sqlite")
        #expect(root.socketPath == "/run/assetd/control.sock")
        #expect(root.roots == ["/var/cache/assetd"], "not all of /var/cache")
        let user = DaemonConfig.embeddedDefaults(
            uid: 1000,
            environment: [
                "HOME": "/h", "XDG_RUNTIME_DIR": "/run/user/1000", "XDG_STATE_HOME": "/s",
                "XDG_CACHE_HOME": "/c",
            ])
        #expect(user.storePath == "/s/assetd/assetd.sqlite")
        #expect(user.socketPath == "/run/user/1000/assetd.sock")
        #expect(user.roots == ["/c/assetd"])
    }

    static let errors: [(String, Int?, String?)] = [
        ("[store]\npath = \"/a\"\ndurabilty = \"full\"\n", 3, "store.durabilty"),
        ("[control]\nmode = \"rwx\"\n", 2, "control.mode"),
        ("[control]\nmax_connections = 0\n", 2, "control.max_connections"),
        ("[files]\nroots = [\"relative\"]\n", 2, "files.roots"),
        ("[files]\nunlink_delay = \"soon\"\n", 2, "files.unlink_delay"),
        ("[log]\nlevel = \"loud\"\n", 2, "log.level"),
        ("[stor]\npath = \"/a\"\n", 1, "stor"),
        ("[store]\npath = \n", 2, nil),
        ("[policy]\nintervall = \"5m\"\n", 2, "policy.intervall"),
        ("\n\n[[indexes]]\nname = \"Bad\"\ncolumns = [{name = \"a\", type = \"text\", path = \"a\"}]\n", 3, "indexes"),
        (
            "[[collections]]\nname = \"c\"\n[[collections.edges]]\nname = \"e\"\nfield = \"f\"\nto = \"file\"\nrules = [\"denyDeleteSource\"]\n",
            3, "collections.edges"
        ),
    ]

    @Test("errors name the file, the line and the key", arguments: errors)
    func errorsNameLineAndKey(text: String, line: Int?, key: String?) {
        do {
            _ = try parse(text)
            Issue.record("accepted:\n\(text)")
        } catch {
            #expect(error.file == "/etc/assetd/test.toml")
            #expect(error.line == line, "\(error)")
            if let key { #expect(error.key == key, "\(error)") }
            #expect(error.description.hasPrefix("/etc/assetd/test.toml:"))
        }
    }

    @Test(
        "roots that meet through a symlink are refused: one folder twice, one inside another, a nested root that is a symlink"
    )
    func rootsMeetingThroughSymlinks() throws {
        let dir = NSTemporaryDirectory() + "assetd-roots-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        defer { try? FileManager.default.removeItem(atPath: dir) }
        for d in ["a/sub", "b", "elsewhere"] {
            try FileManager.default.createDirectory(atPath: "\(dir)/\(d)", withIntermediateDirectories: true)
        }
        #expect(symlink("\(dir)/a", "\(dir)/alias") == 0)
        #expect(symlink("\(dir)/a/sub", "\(dir)/b/linked") == 0)
        #expect(symlink("\(dir)/elsewhere", "\(dir)/a/inner") == 0)
        func roots(_ names: String...) -> String {
            "[files]\nroots = [" + names.map { "\"\(dir)/\($0)\"" }.joined(separator: ", ") + "]\n"
        }
        for (text, words) in [
            (roots("a", "alias"), "the same folder as"), (roots("a", "b/linked"), "inside"),
            (roots("a", "a/inner"), "reached through a symlink below"),
        ] {
            do {
                _ = try parse(text)
                Issue.record("accepted: \(text)")
            } catch {
                #expect(error.key == "files.roots" && error.line == 2 && error.message.contains(words), "\(error)")
            }
        }
        // A root that is a symlink to / has every other root inside it (and is / itself).
        #expect(symlink("/", "\(dir)/everything") == 0)
        for text in [roots("a", "everything"), roots("everything")] {
            do {
                _ = try parse(text)
                Issue.record("accepted: \(text)")
            } catch {
                #expect(error.key == "files.roots" && error.message.contains("/"), "\(error)")
            }
        }
        // Nested for real, side by side, or not there yet: fine.
        _ = try parse(roots("a", "a/sub"))
        _ = try parse(roots("a", "b", "elsewhere"))
        _ = try parse(roots("a", "missing"))
    }

    @Test(
        "a root bind-mounted at another root's path is refused: one folder under two paths",
        .enabled(if: Tmpfs.available, "mounting needs CAP_SYS_ADMIN"))
    func rootsMeetingThroughABindMount() throws {
        let dir = NSTemporaryDirectory() + "assetd-roots-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        defer { try? FileManager.default.removeItem(atPath: dir) }
        for d in ["a", "b"] {
            try FileManager.default.createDirectory(atPath: "\(dir)/\(d)", withIntermediateDirectories: true)
        }
        try #require(mount("\(dir)/a", "\(dir)/b", nil, UInt(MS_BIND), nil) == 0)
        defer { umount2("\(dir)/b", Int32(MNT_DETACH)) }
        do {
            _ = try parse("[files]\nroots = [\"\(dir)/a\", \"\(dir)/b\"]\n")
            Issue.record("accepted two roots that are one folder")
        } catch {
            #expect(error.key == "files.roots" && error.message.contains("the same folder as"), "\(error)")
        }
    }

    @Test("etc/assetd.toml, the commented example, parses and matches the root defaults")
    func shippedExampleParses() throws {
        let path = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("etc/assetd.toml").path
        let text = try String(contentsOfFile: path, encoding: .utf8)
        let c = try ConfigParser(file: path, text: text).parse(
            defaults: DaemonConfig.embeddedDefaults(uid: 0, environment: [:]))
        let d = DaemonConfig.embeddedDefaults(uid: 0, environment: [:])
        #expect(c.storePath == d.storePath && c.socketPath == d.socketPath && c.roots == d.roots)
        #expect(c.socketMode == d.socketMode && c.maxRequestBytes == d.maxRequestBytes && c.durability == d.durability)
        #expect(c.unlinkDelay == d.unlinkDelay && c.orphanGrace == d.orphanGrace && c.logLevel == d.logLevel)
    }
}
