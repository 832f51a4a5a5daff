// assetd's command line and config file as an operator meets them (assetd(8), DESCRIPTION,
// CONFIGURATION and START-UP AND SHUTDOWN): --check-config, --version, errors that name the file,
// line and key with exit 78, and SIGHUP reloads.

import AssetClient
import AssetStore
import Foundation
import Testing

/// A config that must be refused, and the key the error must name.
struct BadConfig: CustomTestStringConvertible, Sendable {
    var label: String
    /// Goes into [control].
    var control = ""
    /// Appended at the end.
    var extra = ""
    /// The key the message names.
    var key: String
    /// Text on the offending line, to find its number.
    var marker: String
    var testDescription: String { label }
}

@Suite("config") struct ConfigTests {
    @Test("assetd --check-config prints the effective settings, exits 0 and starts nothing")
    func checkConfig() throws {
        let h = try DaemonHarness(
            controlSection: #"mode = "0600""#, filesSection: #"unlink_delay = "2h""#, start: false)
        let r = try runAssetd(["--config", h.configPath, "--check-config"])
        #expect(r.status == 0, "\(r.stderr)")
        let lines = Set(r.stdout.split(separator: "\n").map(String.init))
        for expected in [
            "store.path = \(h.database)", "control.socket = \(h.socket)", "control.mode = 0600",
            "files.roots = [\"\(h.root)\"]", "files.unlink_delay = 2h", "log.level = debug",
            "control.max_request_bytes = 1048576", "store.durability = full", "control.enforce_ownership = false",
        ] {
            #expect(lines.contains(expected), "missing \(expected) in:\n\(r.stdout)")
        }
        #expect(r.stdout.contains(h.configPath), "it says which file it read")
        #expect(!h.exists(h.socket))
        #expect(!h.exists(h.database))
    }

    @Test("a configuration file others may write is refused at start (78) and by a reload")
    func writableConfigFile() throws {
        let h = try DaemonHarness(start: false)
        #expect(chmod(h.configPath, 0o666) == 0)
        let r = try runAssetd(["--config", h.configPath, "--check-config"])
        #expect(r.status == 78, "\(r.stdout)\(r.stderr)")
        #expect(r.stderr.contains("writable by its group or others"), "\(r.stderr)")
        #expect(chmod(h.configPath, 0o644) == 0)
        try h.start()
        #expect(chmod(h.configPath, 0o666) == 0)
        kill(h.process!.processIdentifier, SIGHUP)  // started above
        #expect(eventually { h.log.contains("reload failed") }, "\(h.log.suffix(2000))")
        #expect(h.log.contains("writable by its group or others"), "\(h.log.suffix(2000))")
        #expect(h.isRunning)
        #expect(h.stop() == 0)
        // assetctl --db takes the roots it unlinks in from the same file.
        let v = try runProcess(Binaries.assetctl, ["--db", h.database, "--config", h.configPath, "verify"])
        #expect(v.status != 0 && v.stderr.contains("writable by its group or others"), "\(v.stdout)\(v.stderr)")
    }

    @Test("a socket every user may open, with ownership not enforced, is warned of; enforced, it is not")
    func openSocketWarned() throws {
        let open = try DaemonHarness(controlSection: #"mode = "0666""#, start: false)
        let r = try runAssetd(["--config", open.configPath, "--check-config"])
        #expect(r.status == 0 && r.stderr.contains("lets every local user open the socket"), "\(r.stderr)")
        let enforced = try DaemonHarness(controlSection: "mode = \"0666\"\nenforce_ownership = true", start: false)
        let e = try runAssetd(["--config", enforced.configPath, "--check-config"])
        #expect(e.status == 0 && !e.stderr.contains("lets every local user"), "\(e.stderr)")
    }

    @Test("the database and its folder are assetd's alone, whatever umask it is started with")
    func privateStateFiles() throws {
        let h = try DaemonHarness(start: false)
        h.startUmask = 0o022
        try h.start()
        try h.client().putObject("c", "k", ["v": 1])
        var st = stat()
        for path in [h.database, h.database + "-wal", (h.database as NSString).deletingLastPathComponent] {
            #expect(stat(path, &st) == 0 && st.st_mode & 0o077 == 0, "\(path): \(String(st.st_mode, radix: 8))")
        }
    }

    @Test("assetd --version prints the version the daemon answers ping with")
    func version() throws {
        let r = try runAssetd(["--version"])
        #expect(r.status == 0)
        let h = try DaemonHarness()
        #expect(
            try h.client().call("ping")["version"] == .string(r.stdout.trimmingCharacters(in: .whitespacesAndNewlines)))
    }

    static let badConfigs: [BadConfig] = [
        BadConfig(
            label: "an unknown key in [control]", control: "bogus = 1", key: "control.bogus", marker: "bogus = 1"),
        BadConfig(label: "an unknown section", extra: "[store2]\nx = 1", key: "store2", marker: "[store2]"),
        BadConfig(label: "an unknown key in [log]", extra: "colour = \"red\"", key: "log.colour", marker: "colour ="),
        BadConfig(
            label: "an unknown key in [[collections]]", extra: "[[collections]]\nname = \"c\"\ncolor = \"red\"",
            key: "collections.color", marker: "color ="),
        BadConfig(label: "a mode that is a number", control: "mode = 660", key: "control.mode", marker: "mode = 660"),
        BadConfig(
            label: "max_request_bytes that is text", control: "max_request_bytes = \"lots\"",
            key: "control.max_request_bytes",
            marker: "max_request_bytes"),
    ]

    @Test("a config error exits 78 and names the file, the line and the key", arguments: badConfigs)
    func badConfig(_ bad: BadConfig) throws {
        let h = try DaemonHarness(extraConfig: bad.extra, controlSection: bad.control, start: false)
        let text = h.configText()
        let line =
            try #require(
                text.split(separator: "\n", omittingEmptySubsequences: false).firstIndex { $0.contains(bad.marker) })
            + 1
        let r = try runAssetd(["--config", h.configPath])
        #expect(r.status == 78, "\(r.stderr)")
        #expect(r.stderr.contains(h.configPath), "names the file: \(r.stderr)")
        #expect(r.stderr.contains(bad.key), "names the key: \(r.stderr)")
        #expect(
            r.stderr.contains("\(h.configPath):\(line)") || r.stderr.contains("line \(line)"),
            "names line \(line): \(r.stderr)")
        #expect(!h.exists(h.socket))
        let check = try runAssetd(["--config", h.configPath, "--check-config"])
        #expect(check.status == 78, "--check-config fails the same way")
    }

    @Test("--check-config refuses a control.socket longer than a socket address holds, naming line and key (exit 78)")
    func socketPathTooLong() throws {
        let h = try DaemonHarness(start: false)
        // In the harness's folder: assetd refuses a socket in one others may write, as /tmp.
        let prefix = h.dir + "/"
        let fits = prefix + String(repeating: "s", count: 107 - 5 - prefix.utf8.count) + ".sock"
        let long = prefix + String(repeating: "s", count: 108 - 5 - prefix.utf8.count) + ".sock"
        #expect(fits.utf8.count == 107 && long.utf8.count == 108)
        for (socket, status) in [(fits, Int32(0)), (long, 78)] {
            let file = h.dir + "/socket.toml"
            try "[control]\nsocket = \"\(socket)\"\n".write(toFile: file, atomically: true, encoding: .utf8)
            let r = try runAssetd(["--config", file, "--check-config"])
            #expect(r.status == status, "\(socket.utf8.count) bytes: \(r.stderr)")
            if status == 78 {
                #expect(
                    r.stderr == "assetd: \(file):2: control.socket: must fit in a socket address (at most 107 bytes)\n")
            }
        }
    }

    @Test("a file that is not TOML exits 78 naming the file and line")
    func notTOML() throws {
        let h = try DaemonHarness(extraConfig: "this is = = not toml", start: false)
        let r = try runAssetd(["--config", h.configPath])
        #expect(r.status == 78, "\(r.stderr)")
        #expect(r.stderr.contains(h.configPath))
        let line = h.configText().split(separator: "\n", omittingEmptySubsequences: false).firstIndex {
            $0.contains("not toml")
        }.map { $0 + 1 }
        #expect(
            line.map { r.stderr.contains("\(h.configPath):\($0)") || r.stderr.contains("line \($0)") } == true,
            "\(r.stderr)")
    }

    @Test("a missing config file named with --config exits 78")
    func missingConfig() throws {
        let r = try runAssetd(["--config", "/nonexistent/assetd.toml"])
        #expect(r.status == 78)
        #expect(r.stderr.contains("/nonexistent/assetd.toml"))
    }

    @Test(
        "a config file that cannot be read is named with the system's reason, exit 78",
        arguments: [
            ("missing.toml", "No such file or directory"), ("folder", "it is a folder"),
            ("binary.toml", "not UTF-8 text"),
        ])
    func unreadableConfig(name: String, reason: String) throws {
        let h = try DaemonHarness(start: false)
        let path = h.dir + "/" + name
        if name == "folder" { try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true) }
        if name == "binary.toml" {
            #expect(FileManager.default.createFile(atPath: path, contents: Data([0xff, 0xfe, 0x0a])))
        }
        let r = try runAssetd(["--config", path, "--check-config"])
        #expect(r.status == 78)
        #expect(r.stderr == "assetd: \(path): cannot read: \(reason)\n", "\(r.stderr)")
    }

    @Test("SIGHUP reloads the log level without a restart")
    func reloadLogLevel() throws {
        let h = try DaemonHarness(logLevel: "info")
        let c = try h.client()
        func churn(_ name: String) throws {
            let f = try h.makeFile(name)
            try c.putObject("hup", name, ["file": .string(f)])
            try c.deleteObject("hup", name)
            #expect(eventually { !h.exists(f) })
            try c.call("stats")
        }
        try churn("one")
        let pid = h.process?.processIdentifier
        h.logLevel = "debug"
        try h.reload()
        // Whatever churn one made the daemon log is written before the reload's own line.
        let beforeReload = h.log.components(separatedBy: "reloaded").first ?? ""
        #expect(
            !beforeReload.contains(" debug "), "nothing at debug while log.level is info:\n\(beforeReload.suffix(2000))"
        )
        try churn("two")
        #expect(eventually { h.log.contains(" debug ") }, "debug lines after the reload:\n\(h.log.suffix(2000))")
        #expect(h.process?.processIdentifier == pid && h.isRunning, "same process")
        #expect(try c.call("ping")["version"] != nil, "same connection")
    }

    @Test("SIGHUP with a broken config keeps the settings in force and keeps serving")
    func reloadBroken() throws {
        let h = try DaemonHarness()
        let c = try h.client()
        try "[control]\nbogus = true\n".write(toFile: h.configPath, atomically: true, encoding: .utf8)
        kill(h.process!.processIdentifier, SIGHUP)  // started above
        #expect(eventually { h.log.contains("reload failed") })
        #expect(try c.call("ping")["version"] != nil)
        try c.putObject("still", "here")
        #expect(h.isRunning)
    }
}

@Suite struct StartHangUpTests {
    @Test("a SIGHUP while the daemon starts does not end it: the reload is done once it serves")
    func hangUpDuringStart() throws {
        let h = try DaemonHarness(start: false)
        let hold = h.dir + "/hold-start"
        h.environment = ["ASSETD_DEBUG_HOLD_START": hold]
        #expect(FileManager.default.createFile(atPath: hold, contents: nil))
        Thread {
            // The held daemon wrote its pid: hang up on it, then let it go on.
            guard eventually({ FileManager.default.fileExists(atPath: hold + ".held") }),
                let text = try? String(contentsOfFile: hold + ".held", encoding: .utf8), let pid = Int32(text)
            else { return }
            kill(pid, SIGHUP)
            unlink(hold)
        }.start()
        try h.start()  // throws if the daemon exited
        #expect(eventually { h.log.contains("a SIGHUP came while starting: reloading") }, "\(h.log.suffix(2000))")
        #expect(h.isRunning)
        #expect(try h.client().call("ping")["version"] != nil)
    }
}
