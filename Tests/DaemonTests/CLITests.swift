// The real assetctl against a real assetd (assetctl(1)): each common command's human output and
// --json, the exit statuses 0, 1, 64 and 69, --db on a stopped and on a running daemon's
// database, and the README's quick start.

import AssetClient
import AssetctlText
import AssetStore
import Foundation
import Testing

@Suite("assetctl") struct CLITests {
    /// The one JSON line `--json` printed.
    func json(_ r: ProcessResult, sourceLocation: SourceLocation = #_sourceLocation) -> JSONValue? {
        #expect(r.status == 0, "\(r.stderr)", sourceLocation: sourceLocation)
        #expect(
            r.stdout.hasSuffix("\n") && r.stdout.dropLast().contains("\n") == false, "one line: \(r.stdout)",
            sourceLocation: sourceLocation)
        return try? JSONValue.parse(r.stdout)
    }

    /// `name  value` listing lines as a dictionary.
    func listing(_ text: String) -> [String: String] {
        var out: [String: String] = [:]
        for line in text.split(separator: "\n") {
            let parts = line.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: true)
            if parts.count == 2 { out[String(parts[0])] = parts[1].trimmingCharacters(in: .whitespaces) }
        }
        return out
    }

    @Test("put, get, ls and rm print what they did, and --json the raw result")
    func objects() throws {
        let h = try DaemonHarness()
        let c = try h.client()
        let f = try h.makeFile("photos/a.jpg", size: 100)

        let put = try h.assetctl(
            "put", "photos", "a", #"{"x":1}"#, "--file", f, "--owner", "alice", "--meta", #"{"m":2}"#)
        let commit = try c.call("ping")["commit"]?.intValue ?? -1
        #expect(put.status == 0, "\(put.stderr)")
        #expect(put.stdout == "commit \(commit)\n")
        #expect(put.stderr == "")
        let stored = try c.getObject("photos", "a")
        #expect(stored["value"] == ["x": 1, "file": .string(f)])
        #expect(stored["metadata"] == ["m": 2])
        #expect(stored["owner"] == "alice")

        let get = try h.assetctl("get", "photos", "a")
        #expect(get.status == 0)
        let shown = try JSONValue.parse(get.stdout)
        #expect(get.stdout == Formatting.pretty(shown), "the object, pretty-printed")
        #expect(shown["value"] == stored["value"] && shown["owner"] == "alice" && shown["metadata"] == ["m": 2])
        #expect(json(try h.assetctl("--json", "get", "photos", "a")) == stored)

        let putJSON = json(try h.assetctl("--json", "put", "photos", "b", "--file", f))
        #expect(putJSON?["commit"]?.intValue == commit + 1)
        #expect(try c.getObject("photos", "b")["value"] == ["file": .string(f)], "--file alone makes the value {file}")

        let ls = try h.assetctl("ls", "photos")
        #expect(ls.status == 0)
        #expect(ls.stdout == "a\nb\n")
        #expect(json(try h.assetctl("--json", "ls", "photos")) == ["keys": ["a", "b"], "next": .null])
        let page = try h.assetctl("ls", "photos", "--limit", "1")
        #expect(page.stdout == "a\n")
        #expect(page.stderr.contains("more keys"), "a further page is announced on stderr: \(page.stderr)")
        #expect(try h.assetctl("ls", "photos", "--limit", "1", "--all").stdout == "a\nb\n")

        let rmA = try h.assetctl("rm", "photos", "a")
        #expect(rmA.status == 0)
        #expect(rmA.stdout == "commit \(commit + 2)\ndeleted photos/a\n", "the file stays: b holds it")
        let rmB = json(try h.assetctl("--json", "rm", "photos", "b"))
        #expect(rmB == ["commit": .int(commit + 3), "deleted": [ref("photos", "b")], "unlinks_queued": [.string(f)]])
        #expect(eventually { !h.exists(f) })

        let touchPut = try h.assetctl("put", "photos", "t")
        #expect(touchPut.status == 0)
        let touch = try h.assetctl("touch", "photos", "t")
        #expect(touch.status == 0)
        #expect(touch.stdout == "commit \(commit + 4)\n", "the latest commit: the access is written later")
    }

    @Test("rm prints the cascade and the queued files, one per line")
    func rmCascade() throws {
        let h = try DaemonHarness()
        let c = try h.client()
        let f = try h.makeFile("c.bin")
        try c.putObject("c", "parent")
        try c.putObject("c", "child", ["file": .string(f)])
        try c.addEdge(
            "own", from: ref("c", "parent"), to: ref("c", "child"), rules: ["deleteDestinationIfSourceDeleted"])
        let commit = (try c.call("ping")["commit"]?.intValue ?? 0) + 1
        let r = try h.assetctl("rm", "c", "parent")
        #expect(r.stdout == "commit \(commit)\ndeleted c/parent\ndeleted c/child\nqueued \(f)\n")
    }

    /// Three objects: alice 100 bytes, bob 100 (the same file) and 50.
    func seed(_ h: DaemonHarness) throws -> (String, String) {
        let c = try h.client()
        let f1 = try h.makeFile("f1", size: 100), f2 = try h.makeFile("f2", size: 50)
        try c.putObject("photos", "a", ["file": .string(f1)], owner: "alice")
        try c.putObject("photos", "b", ["file": .string(f1)], owner: "bob")
        try c.putObject("photos", "c", ["file": .string(f2)], owner: "bob")
        return (f1, f2)
    }

    @Test("query prints a table headed by column names; --json the rows")
    func query() throws {
        let h = try DaemonHarness()
        _ = try seed(h)
        let r = try h.assetctl("query", "WHERE owner = ? ORDER BY key", "bob")
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout == "collection  key\nphotos      b\nphotos      c\n")
        #expect(
            json(try h.assetctl("--json", "query", "WHERE size > ? ORDER BY key", "60")) == [
                "rows": [ref("photos", "a"), ref("photos", "b")]
            ])
        let rows = try h.assetctl("query", "--include", "rows", "WHERE key = ?", "c")
        let lines = rows.stdout.split(separator: "\n")
        #expect(lines.count == 2)
        #expect(
            lines.first?.split(separator: " ", omittingEmptySubsequences: true).prefix(5) == [
                "collection", "key", "owner", "size", "files",
            ])
        #expect(
            lines.last?.split(separator: " ", omittingEmptySubsequences: true).prefix(5) == [
                "photos", "c", "bob", "50", "1",
            ])
        let empty = try h.assetctl("query", "WHERE owner = ?", "nobody-at-all")
        #expect(empty.status == 0)
    }

    @Test("aggregate prints the value alone, or a table with --group-by; --json the result")
    func aggregate() throws {
        let h = try DaemonHarness()
        _ = try seed(h)
        let sum = try h.assetctl("aggregate", "SUM(size)")
        #expect(sum.status == 0, "\(sum.stderr)")
        #expect(sum.stdout == "250\n")
        #expect(try h.assetctl("aggregate", "COUNT(*)", "WHERE owner = ?", "bob").stdout == "2\n")
        let grouped = try h.assetctl("aggregate", "--group-by", "owner", "SUM(size)")
        #expect(grouped.stdout == "owner  value\nalice    100\nbob      150\n")
        #expect(
            json(try h.assetctl("--json", "aggregate", "--group-by", "owner", "SUM(size)")) == [
                "rows": [["owner": "alice", "value": 100], ["owner": "bob", "value": 150]]
            ])
    }

    @Test("file shows the registry row and the edges keeping it; --json the whole report")
    func file() throws {
        let h = try DaemonHarness()
        let (f1, _) = try seed(h)
        let r = try h.assetctl("file", f1)
        #expect(r.status == 0, "\(r.stderr)")
        let fields = listing(r.stdout)
        #expect(fields["path"] == f1)
        #expect(fields["size"] == "100")
        #expect(fields["retained_by"] == "2")
        #expect(fields["missing"] == "false")
        #expect(r.stdout.contains("NAME  SOURCE    DESTINATION"))
        #expect(r.stdout.contains("file  photos/a  \(f1)  deleteDestinationIfAllSourcesDeleted  derived\n"))
        #expect(r.stdout.contains("file  photos/b  \(f1)  deleteDestinationIfAllSourcesDeleted  derived\n"))
        let report = json(try h.assetctl("--json", "file", f1))
        #expect(report == (try h.client().call("file.get", ["path": .string(f1)])))

        let missing = try h.assetctl("file", h.root + "/nothing")
        #expect(missing.status == 1)
        #expect(missing.stderr.contains(h.root + "/nothing"))
    }

    @Test("stats prints name  value lines, nested names dotted; --json the counters")
    func stats() throws {
        let h = try DaemonHarness()
        _ = try seed(h)
        let r = try h.assetctl("stats")
        #expect(r.status == 0)
        let fields = listing(r.stdout)
        #expect(fields["objects"] == "3")
        #expect(fields["files"] == "2")
        #expect(fields["bytes"] == "150")
        #expect(fields["bytes_per_owner.alice"] == "100")
        #expect(fields["bytes_per_owner.bob"] == "150")
        #expect(fields["pending_unlinks"] == "0")
        #expect(fields["latency_ms.p99"] != nil)
        let s = json(try h.assetctl("--json", "stats"))
        #expect(s?["objects"] == 3)
        #expect(s?["bytes_per_owner"] == ["alice": 100, "bob": 150])
    }

    @Test("pending lists queued unlinks as a table; --json the rows")
    func pending() throws {
        let h = try DaemonHarness(filesSection: #"unlink_delay = "1h""#)
        let c = try h.client()
        let f = try h.makeFile("p.bin")
        try c.putObject("p", "a", ["file": .string(f)])
        try c.deleteObject("p", "a")
        let r = try h.assetctl("pending")
        #expect(r.status == 0, "\(r.stderr)")
        let lines = r.stdout.split(separator: "\n")
        #expect(lines.count == 2)
        #expect(
            lines.first?.split(separator: " ", omittingEmptySubsequences: true) == [
                "PATH", "QUEUED", "ATTEMPTS", "DEFERRED", "NEXT", "LAST_ERROR",
            ])
        let row = lines.last?.split(separator: " ", omittingEmptySubsequences: true) ?? []
        #expect(
            row.count == 6 && row.first.map(String.init) == f && row[2] == "0" && row[3] == "-" && row[5] == "-",
            "\(lines.last ?? "")")
        let queued = try #require(try c.call("pending")["pending"]?.arrayValue?.first)
        let next = try #require(queued["next_attempt"]?.doubleValue)
        #expect(row.count == 6 && row[4] == Formatting.timestamp(next))
        let j = json(try h.assetctl("--json", "pending"))
        #expect(j?["pending"]?.arrayValue?.first?["path"] == .string(f))
        #expect(j?["pending"]?.arrayValue?.first?["attempts"] == 0)
        let sweep = try h.assetctl("sweep")
        #expect(listing(sweep.stdout)["pending"] == "1")
    }

    @Test("forget drops a queued unlink and keeps the file; a path with no row fails; non-admins are refused")
    func forget() throws {
        let h = try DaemonHarness(controlSection: #"mode = "0666""#, filesSection: #"unlink_delay = "1h""#)
        let c = try h.client()
        let f = try h.makeFile("kept.bin")
        try c.putObject("p", "a", ["file": .string(f)])
        try c.deleteObject("p", "a")
        if Nobody.canSwitch {
            let refused = try h.assetctlAsNobody("forget", f)
            #expect(refused.status == 1 && refused.stderr.contains("admin"), "\(refused.status) \(refused.stderr)")
        }
        // Spelled with a doubled slash: matched as the daemon normalises it.
        let spelled = f.replacingOccurrences(of: "/kept.bin", with: "//kept.bin")
        let r = try h.assetctl("forget", spelled)
        #expect(r.status == 0 && r.stdout == "forgot \(f)\n", "\(r.stdout) \(r.stderr)")
        #expect(try c.call("pending")["pending"] == [])
        #expect(try c.call("stats")["counters"]?["forgotten"] == 1)
        #expect(h.exists(f), "forgetting unlinks nothing")
        let again = try h.assetctl("forget", f)
        #expect(again.status == 1 && again.stderr.contains("no queued unlink: \(f)"), "\(again.stderr)")
    }

    @Test("edge add prints the commit; edge ls a table NAME SOURCE DESTINATION RULES KIND; --json the edges")
    func edges() throws {
        let h = try DaemonHarness()
        let c = try h.client()
        for k in ["a", "c"] { try c.putObject("photos", k) }
        let add = try h.assetctl(
            "edge", "add", "rel", "photos", "a", "photos", "c", "--rules", "notifyIfDestinationDeleted,denyDeleteSource"
        )
        #expect(add.status == 0, "\(add.stderr)")
        #expect(add.stdout == "commit \(try c.call("ping")["commit"]?.intValue ?? -1)\n")
        let ls = try h.assetctl("edge", "ls", "--source", "photos", "a")
        #expect(
            ls.stdout == """
                NAME  SOURCE    DESTINATION  RULES                                        KIND
                rel   photos/a  photos/c     notifyIfDestinationDeleted,denyDeleteSource  manual

                """)
        let j = json(try h.assetctl("--json", "edge", "ls", "--name", "rel"))
        #expect(
            j == [
                "edges": [
                    [
                        "name": "rel", "source": ref("photos", "a"), "destination": ref("photos", "c"),
                        "rules": ["notifyIfDestinationDeleted", "denyDeleteSource"], "kind": "manual",
                    ]
                ]
            ])
        #expect(try h.assetctl("edge", "count", "--dest", "photos", "c").stdout == "1\n")
        let f = try h.makeFile("e.bin")
        #expect(
            try h.assetctl(
                "edge", "add", "keeps", "photos", "c", "--file", f, "--rules", "deleteDestinationIfAllSourcesDeleted"
            ).status == 0)
        #expect(try c.call("edge.count", ["destination": ["file": .string(f)]]) == ["count": 1])
        let denied = try h.assetctl("rm", "photos", "a")
        #expect(denied.status == 1, "the deny edge holds")
        #expect(denied.stderr.contains("rel"), "\(denied.stderr)")
    }

    @Test("a daemon error exits 1 with a message on stderr and nothing on stdout")
    func daemonErrors() throws {
        let h = try DaemonHarness()
        let get = try h.assetctl("get", "photos", "zz")
        #expect(get.status == 1)
        #expect(get.stdout == "")
        #expect(get.stderr.hasPrefix("assetctl: "), "\(get.stderr)")
        #expect(get.stderr.contains("photos/zz"))
        for args in [
            ["rm", "photos", "zz"], ["touch", "photos", "zz"],
            ["edge", "add", "n", "photos", "a", "photos", "b", "--rules", "notifyIfSourceDeleted"],
            ["query", "WHERE key IN (SELECT name FROM sqlite_master)"], ["put", "p", "k", "--file", "/etc/hostname"],
            ["watch", "--type", "object.exploded"],
        ] {
            let r = try runProcess(Binaries.assetctl, ["--socket", h.socket] + args)
            #expect(r.status == 1, "\(args): \(r.stderr)")
            #expect(!r.stderr.isEmpty, "\(args)")
        }
    }

    static let usageErrors: [[String]] = [
        ["frobnicate"],
        ["get", "photos"],
        ["put", "c", "k", "{not json"],
        ["put", "c", "k", "[1]", "--file", "/x"],
        ["ls", "c", "--limit", "0"],
        ["edge", "add", "n", "c", "s"],
        ["edge", "add", "n", "c", "s", "d", "k", "--file", "/x"],
        ["query"],
        ["get", "c", "k", "--bogus"],
        ["--db", "/tmp/x.sqlite", "ping"],
    ]

    @Test("a usage error exits 64 with a message on stderr", arguments: usageErrors)
    func usage(_ args: [String]) throws {
        let h = try DaemonHarness()
        let r = try runProcess(Binaries.assetctl, ["--socket", h.socket] + args)
        #expect(r.status == 64, "\(args): \(r.stdout)\(r.stderr)")
        #expect(!r.stderr.isEmpty)
        #expect(try h.client().call("stats")["objects"] == 0, "nothing was sent")
    }

    @Test("an unreachable daemon exits 69: no socket, a stale socket, a file that is not a socket")
    func unreachable() throws {
        let h = try DaemonHarness(start: false)
        let none = try runProcess(Binaries.assetctl, ["--socket", h.dir + "/nothing.sock", "ping"])
        #expect(none.status == 69)
        #expect(none.stderr.contains(h.dir + "/nothing.sock"), "\(none.stderr)")
        try makeStaleSocket(at: h.socket)
        #expect(try h.assetctl("get", "a", "b").status == 69)
        #expect(FileManager.default.createFile(atPath: h.dir + "/plain", contents: Data()))
        #expect(try runProcess(Binaries.assetctl, ["--socket", h.dir + "/plain", "ls", "c"]).status == 69)
        let env = try runProcess(
            Binaries.assetctl, ["ping"], environment: ["ASSETD_SOCKET": h.dir + "/env.sock", "PATH": "/usr/bin:/bin"])
        #expect(env.status == 69)
        #expect(env.stderr.contains(h.dir + "/env.sock"), "$ASSETD_SOCKET is used: \(env.stderr)")
    }

    @Test("--db on a stopped daemon's database reads and writes, and the daemon sees the writes")
    func offlineDatabase() throws {
        let h = try DaemonHarness()
        let f = try h.makeFile("off.bin")
        let c = try h.client()
        try c.putObject("off", "a", ["file": .string(f)], owner: "alice")
        try c.putObject("off", "b")
        c.close()
        #expect(h.stop() == 0)

        let db = ["--db", h.database, "--config", h.configPath]
        let get = try runProcess(Binaries.assetctl, db + ["--json", "get", "off", "a"])
        #expect(get.status == 0, "\(get.stderr)")
        #expect((try? JSONValue.parse(get.stdout))?["owner"] == "alice")
        #expect(try runProcess(Binaries.assetctl, db + ["ls", "off"]).stdout == "a\nb\n")
        #expect(try runProcess(Binaries.assetctl, db + ["aggregate", "COUNT(*)"]).stdout == "2\n")
        let put = try runProcess(Binaries.assetctl, db + ["put", "off", "c", #"{"v":1}"#])
        #expect(put.status == 0, "\(put.stderr)")
        let rm = try runProcess(Binaries.assetctl, db + ["rm", "off", "a"])
        #expect(rm.status == 0, "\(rm.stderr)")
        #expect(rm.stdout.contains("queued \(f)"))

        try h.start()
        let r = try h.client()
        #expect(try r.getObject("off", "c")["value"] == ["v": 1])
        #expect(try r.getObject("off", "a") == .null)
        #expect(eventually { !h.exists(f) }, "the queued file goes, offline or at the next start")
        #expect(try r.call("pending", [:]) == ["pending": []])
    }

    @Test("--db on a running daemon's database allows reads and refuses writes with a message (exit 1)")
    func onlineDatabase() throws {
        let h = try DaemonHarness()
        let c = try h.client()
        try c.putObject("on", "a", ["v": 1])
        let db = ["--db", h.database, "--config", h.configPath]
        let get = try runProcess(Binaries.assetctl, db + ["--json", "get", "on", "a"])
        #expect(get.status == 0, "\(get.stderr)")
        #expect((try? JSONValue.parse(get.stdout))?["value"] == ["v": 1])
        #expect(try runProcess(Binaries.assetctl, db + ["stats"]).status == 0)
        for write in [["put", "on", "b"], ["rm", "on", "a"], ["touch", "on", "a"]] {
            let r = try runProcess(Binaries.assetctl, db + write)
            #expect(r.status == 1, "\(write): \(r.stderr)")
            #expect(r.stderr.contains(h.database), "the message names the database: \(r.stderr)")
        }
        #expect(try c.getObject("on", "b") == .null)
        #expect(try c.getObject("on", "a")["value"] == ["v": 1])
        try c.putObject("on", "c")
        #expect(h.isRunning)
    }

    @Test("shutdown through assetctl stops the daemon with exit 0")
    func shutdown() throws {
        let h = try DaemonHarness()
        let r = try h.assetctl("shutdown")
        #expect(r.status == 0, "\(r.stderr)")
        #expect(h.waitForExit() == 0)
    }

    @Test("the README tour: a shared file survives the first delete, goes with the second, and watch prints it")
    func readmeTour() throws {
        let h = try DaemonHarness()
        let movie = try h.makeFile("demo/movie.mp4", size: 1_048_576)
        let watch = try BackgroundProcess(
            Binaries.assetctl, ["--socket", h.socket, "watch", "--type", "file.queued", "--type", "file.unlinked"])
        #expect(eventually { (try? h.client().call("stats")["connections"]) == 2 }, "watch is connected")

        #expect(try h.assetctl("put", "media", "trailer", "--file", movie, "--owner", "alice").status == 0)
        #expect(try h.assetctl("put", "media", "poster", "--file", movie, "--owner", "bob").status == 0)
        let file = try h.assetctl("file", movie)
        #expect(listing(file.stdout)["retained_by"] == "2")
        #expect(
            try h.assetctl("aggregate", "--group-by", "owner", "SUM(size)").stdout
                == "owner    value\nalice  1048576\nbob    1048576\n")
        #expect(
            try h.assetctl("query", "WHERE owner = ? ORDER BY size DESC LIMIT 10", "alice").stdout
                == "collection  key\nmedia       trailer\n")

        #expect(try h.assetctl("rm", "media", "trailer").status == 0)
        // A sweep runs every due unlink before it answers: had the first rm queued the movie,
        // it would be gone now.
        #expect(try h.assetctl("sweep").status == 0)
        #expect(h.exists(movie), "poster still holds it")
        let last = try h.assetctl("rm", "media", "poster")
        #expect(last.stdout.hasSuffix("queued \(movie)\n"))
        #expect(eventually { !h.exists(movie) })
        #expect(watch.waitForLine { $0.hasPrefix("file.unlinked ") && $0.contains("path=\(movie)") }, "\(watch.output)")
        // Events come in commit order, so one from the first rm would be in the output by now.
        #expect(watch.output.filter { $0.hasPrefix("file.") }.count == 2, "\(watch.output)")
        #expect(watch.output.first?.hasPrefix("file.queued ") == true, "\(watch.output)")
        #expect(watch.stop() == 0, "watch ends quietly on SIGINT")
        #expect(json(try h.assetctl("--json", "stats"))?["bytes_per_owner"] == [:])
    }
}
