// What a first-time user trips over with the real assetctl against a real assetd: the forms of
// paths, messages and exit statuses the man pages promise for common mistakes.

import AssetClient
import AssetStore
import Foundation
import Testing

@Suite("assetctl for a first-time user") struct FirstUserTests {
    @Test("a file:// URL given to --file or file reaches the daemon as a URL, not glued to the working folder")
    func fileURL() throws {
        let h = try DaemonHarness()
        let f = try h.makeFile("media/a.mp4", size: 10)
        let put = try h.assetctl("put", "media", "a", "--file", "file://" + f)
        #expect(put.status == 0, "\(put.stderr)")
        let file = try h.assetctl("--json", "file", "file://" + f)
        #expect(file.status == 0, "\(file.stderr)")
        #expect(try JSONValue.parse(file.stdout)["file"]?["path"] == .string(f))
    }
}

extension FirstUserTests {
    @Test("query --include objects shows each value and metadata as its JSON, a {file} value too")
    func queryObjectsShowJSON() throws {
        let h = try DaemonHarness()
        let f = try h.makeFile("media/a.mp4", size: 10)
        #expect(try h.assetctl("put", "media", "a", "--file", f, "--meta", #"{"m":1}"#).status == 0)
        #expect(try h.assetctl("put", "media", "b", #""just text""#).status == 0)
        let r = try h.assetctl("query", "--include", "objects", "WHERE collection = ? ORDER BY key", "media")
        #expect(r.status == 0, "\(r.stderr)")
        let lines = r.stdout.split(separator: "\n")
        #expect(lines.count == 3, "\(r.stdout)")
        #expect(lines.count == 3 && lines[1].hasSuffix(#"{"file":"\#(f)"}  {"m":1}"#), "\(r.stdout)")
        #expect(lines.count == 3 && lines[2].contains(#"  "just text"  "#) && lines[2].hasSuffix("  -"), "\(r.stdout)")
    }
}

extension FirstUserTests {
    @Test("edge add without --rules is a usage error and leaves the existing edge's rules alone")
    func edgeAddNeedsRules() throws {
        let h = try DaemonHarness()
        #expect(try h.assetctl("put", "thumbs", "a").status == 0)
        #expect(try h.assetctl("put", "originals", "a").status == 0)
        let rules = "deleteSourceIfDestinationDeleted"
        #expect(try h.assetctl("edge", "add", "original", "thumbs", "a", "originals", "a", "--rules", rules).status == 0)
        let again = try h.assetctl("edge", "add", "original", "thumbs", "a", "originals", "a")
        #expect(again.status == 64, "\(again.stderr)")
        #expect(again.stderr.contains("--rules"), "\(again.stderr)")
        let edges = try h.client().call("edge.find", ["name": "original"])["edges"]?.arrayValue ?? []
        #expect(edges.count == 1)
        #expect(edges.first?["rules"] == [.string(rules)], "\(edges)")
    }
}

extension FirstUserTests {
    @Test("transact prints what it deleted and queued, as rm does, and each op's result that says something")
    func transactPrintsDeletions() throws {
        let h = try DaemonHarness()
        let f = try h.makeFile("media/a.mp4", size: 10)
        #expect(try h.assetctl("put", "media", "a", "--file", f).status == 0)
        let ops = #"""
            [{"method":"object.delete","params":{"collection":"media","key":"a"}},
             {"method":"edge.remove","params":{"name":"n","source":{"collection":"media","key":"b"},
               "destination":{"collection":"media","key":"c"}}}]
            """#
        let r = try h.assetctl("transact", "-", stdin: ops)
        #expect(r.status == 0, "\(r.stderr)")
        let commit = try h.client().call("ping")["commit"]?.intValue ?? -1
        #expect(r.stdout == "commit \(commit)\ndeleted media/a\nqueued \(f)\nops[1]: {\"removed\":false}\n")
    }
}

extension FirstUserTests {
    @Test("--db on a path with no database fails with exit 1 and creates nothing (a typo must not verify clean)")
    func dbMustExist() throws {
        let h = try DaemonHarness(start: false)
        let typo = h.dir + "/stat/assetd.sqlite"
        let r = try runProcess(Binaries.assetctl, ["--db", typo, "--config", h.configPath, "verify"])
        #expect(r.status == 1, "\(r.stdout)\(r.stderr)")
        #expect(r.stderr.contains("no database at \(typo)"), "\(r.stderr)")
        #expect(!h.exists(h.dir + "/stat"), "no folder, no database, no lock file")
    }
}

extension FirstUserTests {
    @Test("a second assetd on a held database says so once, with the path and the holder's pid")
    func secondDaemonMessage() throws {
        let h = try DaemonHarness()
        let second = h.dir + "/second.toml"
        try h.configText(socket: h.dir + "/run/second.sock").write(toFile: second, atomically: true, encoding: .utf8)
        let r = try runAssetd(["--config", second])
        #expect(r.status == 1, "\(r.stderr)")
        #expect(r.stderr.contains("\(h.database): the database is held by another process (pid "), "\(r.stderr)")
        #expect(!r.stderr.contains("held by another process: the database"), "said twice: \(r.stderr)")
    }
}

extension FirstUserTests {
    @Test("a config file that cannot be read is named with the system's reason, exit 78", arguments: [
        ("missing.toml", "No such file or directory"), ("folder", "it is a folder"), ("binary.toml", "not UTF-8 text"),
    ])
    func unreadableConfig(name: String, reason: String) throws {
        let h = try DaemonHarness(start: false)
        let path = h.dir + "/" + name
        if name == "folder" { try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true) }
        if name == "binary.toml" { FileManager.default.createFile(atPath: path, contents: Data([0xff, 0xfe, 0x0a])) }
        let r = try runAssetd(["--config", path, "--check-config"])
        #expect(r.status == 78)
        #expect(r.stderr == "assetd: \(path): cannot read: \(reason)\n", "\(r.stderr)")
    }
}

extension FirstUserTests {
    @Test("assetctl with no command, or a group without its subcommand, prints help on stderr and exits 64", arguments: [
        [String](), ["edge"], ["template"], ["index"], ["lease"], ["--json"],
    ])
    func noCommand(_ args: [String]) throws {
        let r = try runProcess(Binaries.assetctl, args)
        #expect(r.status == 64, "\(args): \(r.stdout)\(r.stderr)")
        #expect(r.stdout == "")
        #expect(r.stderr.contains("USAGE: assetctl"), "\(r.stderr)")
    }

    @Test("--help still prints help on stdout and exits 0", arguments: [["--help"], ["edge", "--help"], ["help", "lease"]])
    func helpStillSucceeds(_ args: [String]) throws {
        let r = try runProcess(Binaries.assetctl, args)
        #expect(r.status == 0, "\(args): \(r.stderr)")
        #expect(r.stdout.contains("USAGE: assetctl"))
    }
}

extension FirstUserTests {
    @Test("--check-config refuses a control.socket longer than a socket address holds, naming line and key (exit 78)")
    func socketPathTooLong() throws {
        let h = try DaemonHarness(start: false)
        let fits = "/tmp/" + String(repeating: "s", count: 107 - 10) + ".sock"
        let long = "/tmp/" + String(repeating: "s", count: 108 - 10) + ".sock"
        #expect(fits.utf8.count == 107 && long.utf8.count == 108)
        for (socket, status) in [(fits, Int32(0)), (long, 78)] {
            let file = h.dir + "/socket.toml"
            try "[control]\nsocket = \"\(socket)\"\n".write(toFile: file, atomically: true, encoding: .utf8)
            let r = try runAssetd(["--config", file, "--check-config"])
            #expect(r.status == status, "\(socket.utf8.count) bytes: \(r.stderr)")
            if status == 78 {
                #expect(r.stderr == "assetd: \(file):2: control.socket: must fit in a socket address (at most 107 bytes)\n")
            }
        }
    }
}

extension FirstUserTests {
    @Test("backup into a folder that does not exist says why, exit 1")
    func backupMissingFolder() throws {
        let h = try DaemonHarness()
        let target = h.dir + "/no/such/backup.sqlite"
        let r = try h.assetctl("backup", target)
        #expect(r.status == 1)
        #expect(r.stderr == "assetctl: cannot create a file in \(h.dir)/no/such: ENOENT (No such file or directory)\n", "\(r.stderr)")
    }
}

extension FirstUserTests {
    @Test("enforce without [policy] says that nothing is configured, on stdout and as configured: false")
    func enforceWithoutPolicy() throws {
        let h = try DaemonHarness()
        for args in [["enforce", "--dry-run"], ["enforce"]] {
            let r = try runProcess(Binaries.assetctl, ["--socket", h.socket] + args)
            #expect(r.status == 0, "\(args): \(r.stderr)")
            #expect(r.stdout.hasSuffix("\nno [policy] is configured: nothing is evicted or expired\n"), "\(args): \(r.stdout)")
        }
        let json = try h.assetctl("--json", "enforce", "--dry-run")
        #expect(try JSONValue.parse(json.stdout)["configured"] == false)

        let configured = try DaemonHarness(extraConfig: "[policy]\nmax_bytes = \"1GiB\"\n")
        let r = try configured.assetctl("enforce", "--dry-run")
        #expect(r.status == 0, "\(r.stderr)")
        #expect(!r.stdout.contains("no [policy]"), "\(r.stdout)")
        #expect(try JSONValue.parse(try configured.assetctl("--json", "enforce", "--dry-run").stdout)["configured"] == nil)
    }
}

extension FirstUserTests {
    @Test("query --include rows of an index with a text column named value shows the text as it is, no JSON quotes")
    func queryRowsValueColumnIsText() throws {
        let h = try DaemonHarness(extraConfig: """
            [[indexes]]
            name = "labels"
            version = "1"
            columns = [ { name = "value", type = "text", path = "$.label" } ]
            """)
        #expect(try h.assetctl("put", "media", "a", #"{"label":"sunset"}"#).status == 0)
        let r = try h.assetctl("query", "--index", "labels", "--include", "rows", "WHERE value = ?", "sunset")
        #expect(r.status == 0, "\(r.stderr)")
        let lines = r.stdout.split(separator: "\n")
        #expect(lines.count == 2 && lines[1].hasSuffix("  sunset"), "\(r.stdout)")
    }
}
