// What a first-time user meets in assetctl (assetctl(1)): values too large for one argument,
// commands that say what they did when there is nothing to show, one time convention, numbers
// Prometheus reads as written, and the daemon's log of start-up index builds and of
// maintenance runs that changed something.

import AssetClient
import AssetctlText
import AssetStore
import Foundation
import Testing

extension CLITests {
    @Test("put takes a value larger than one argument may be from stdin with - and from --value-file")
    func putLargeValue() throws {
        let h = try DaemonHarness()
        let c = try h.client()
        // Linux refuses one argument over 128 KiB ("Argument list too long").
        let value: JSONValue = ["blob": .string(String(repeating: "x", count: 300_000)), "n": 1]
        let text = value.serialized()

        let piped = try h.assetctl("put", "big", "a", "-", stdin: text + "\n")
        #expect(piped.status == 0, "\(piped.stderr)")
        #expect(try c.getObject("big", "a")["value"] == value)

        let path = h.dir + "/value.json"
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        let f = try h.makeFile("big/b.bin")
        let fromFile = try h.assetctl("put", "big", "b", "--value-file", path, "--file", f)
        #expect(fromFile.status == 0, "\(fromFile.stderr)")
        #expect(try c.getObject("big", "b")["value"] == ["blob": value["blob"]!, "n": 1, "file": .string(f)])

        let both = try h.assetctl("put", "big", "c", "{}", "--value-file", path)
        #expect(both.status == 64 && both.stderr.contains("not both"), "\(both.stderr)")
        let missing = try h.assetctl("put", "big", "d", "--value-file", h.dir + "/none.json")
        #expect(missing.status == 1 && missing.stderr.contains("cannot read \(h.dir)/none.json"), "\(missing.stderr)")
        let bad = try h.assetctl("put", "big", "e", "-", stdin: "{oops")
        #expect(
            bad.status == 64 && bad.stderr.contains("the value on standard input is not valid JSON"), "\(bad.stderr)")
        #expect(try c.getObject("big", "c") == .null && c.getObject("big", "e") == .null)
    }

    @Test("pending shows DEFERRED leased for a leased file; commands with nothing to show, and checkpoint, say so")
    func emptyAndDeferred() throws {
        let h = try DaemonHarness()
        let c = try h.client()
        #expect(try h.assetctl("pending").stdout == "no unlinks pending\n")
        #expect(json(try h.assetctl("--json", "pending")) == ["pending": []])
        #expect(try h.assetctl("lease", "ls").stdout == "no live leases\n")
        #expect(json(try h.assetctl("--json", "lease", "ls")) == ["leases": []])
        let checkpoint = try h.assetctl("checkpoint")
        #expect(checkpoint.status == 0, "\(checkpoint.stderr)")
        #expect(checkpoint.stdout == "checkpointed: the write-ahead log is back in the database file\n")
        #expect(try h.assetctl("edge", "ls").stdout == "no edges\n")
        #expect(try h.assetctl("query", "WHERE owner = ?", "nobody").stdout == "no matches\n")
        #expect(try h.assetctl("aggregate", "--group-by", "owner", "COUNT(*)").stdout == "no matches\n")
        #expect(try h.assetctl("template", "get", "none").stdout == "no templates for none\n")
        let ls = try h.assetctl("ls", "none")
        #expect(ls.status == 0 && ls.stdout == "" && ls.stderr == "assetctl: no keys in none\n", "\(ls.stderr)")

        let f = try h.makeFile("leased.bin")
        let holder = try h.client()
        _ = try holder.call("lease.acquire", ["files": [.string(f)], "ttl": "1h"])
        try c.putObject("l", "a", ["file": .string(f)])
        try c.deleteObject("l", "a")
        let r = try h.assetctl("pending")
        #expect(r.status == 0, "\(r.stderr)")
        let lines = r.stdout.split(separator: "\n").map { $0.split(separator: " ", omittingEmptySubsequences: true) }
        #expect(lines.first == ["PATH", "QUEUED", "ATTEMPTS", "DEFERRED", "NEXT", "LAST_ERROR"], "\(r.stdout)")
        #expect(lines.count == 2 && lines[1].count == 6, "\(r.stdout)")
        #expect(lines.count == 2 && lines[1][0] == f && lines[1][2] == "0" && lines[1][3] == "leased", "\(r.stdout)")
        #expect(try h.assetctl("lease", "ls").stdout.hasPrefix("LEASE "))
        holder.close()
        #expect(eventually { !h.exists(f) }, "the unlink ran once the lease ended")
        #expect(try h.assetctl("pending").stdout == "no unlinks pending\n")
    }

    @Test("get prints the object's times and its files' in UTC, a value's own field untouched; --json the seconds")
    func getTimes() throws {
        let h = try DaemonHarness()
        let c = try h.client()
        let f = try h.makeFile("t/a.bin")
        try c.call(
            "object.put",
            ["collection": "t", "key": "a", "value": ["created": 5, "file": .string(f)], "metadata": ["modified": 6]])
        let stored = try c.getObject("t", "a")
        let get = try h.assetctl("get", "t", "a")
        #expect(get.status == 0, "\(get.stderr)")
        let shown = try JSONValue.parse(get.stdout)
        #expect(get.stdout == Formatting.pretty(shown), "indented JSON still")
        for name in ["created", "modified", "accessed"] {
            let t = try #require(stored[name]?.doubleValue)
            #expect(shown[name] == .string(Formatting.timestamp(t)), "\(name): \(get.stdout)")
        }
        let file = try #require(stored["files"]?.arrayValue?.first)
        let shownFile = shown["files"]?.arrayValue?.first
        let mtime = try #require(file["mtime"]?.doubleValue)
        let firstSeen = try #require(file["first_seen"]?.doubleValue)
        #expect(shownFile?["mtime"] == .string(Formatting.timestamp(mtime)))
        #expect(shownFile?["first_seen"] == .string(Formatting.timestamp(firstSeen)))
        #expect(shownFile?["size"] == file["size"])
        #expect(shown["value"] == stored["value"] && shown["metadata"] == ["modified": 6], "the user's fields stay")
        #expect(Formatting.timestamp(1_763_709_663.5) == "2025-11-21T07:21:03Z")
        #expect(json(try h.assetctl("--json", "get", "t", "a")) == stored)
    }

    @Test("stats --prometheus writes a latency of 1.087 ms as 0.001087, integers without a fraction")
    func prometheusNumbers() throws {
        let text = Prometheus.exposition(stats: [
            "objects": 3, "latency_ms": ["p50": 1.087, "p99": 0.3], "uptime": 12.25,
        ])
        #expect(text.contains("assetd_request_latency_seconds{quantile=\"0.5\"} 0.001087\n"), "\(text)")
        #expect(text.contains("assetd_request_latency_seconds{quantile=\"0.99\"} 0.0003\n"), "\(text)")
        #expect(text.contains("assetd_objects 3\n") && text.contains("assetd_uptime_seconds 12.25\n"), "\(text)")
        let e = try Exposition(text)
        #expect(e.value("assetd_request_latency_seconds", ["quantile": "0.5"]) == 0.001087)
    }

    @Test("a daemon with a quota logs the build of its owner index once when it begins and once when done")
    func quotaIndexLoggedOnce() throws {
        let h = try DaemonHarness(
            extraConfig: """
                [policy]
                interval = "1h"
                [[policy.quota]]
                owner = "alice"
                max_bytes = "1GiB"
                """, logLevel: "info")
        let lines = h.log.split(separator: "\n").filter { $0.contains("index default (owner, accessed") }
        #expect(lines.count == 2, "\(h.log)")
        #expect(
            lines.first?.hasSuffix("rebuilding index default (owner, accessed: quotas are configured): 0 objects")
                == true)
        #expect(
            lines.last?.hasSuffix("rebuilt index default (owner, accessed: quotas are configured): 0 objects") == true)
        #expect(h.stop() == 0)
        try h.start()
        #expect(h.log.components(separatedBy: "index default (owner").count == 3, "built once: \(h.log)")
    }

    @Test("a real enforce or evict that deleted something is logged at info; a dry run is not")
    func policyRunsLogged() throws {
        let h = try DaemonHarness(extraConfig: policyConfig(maxBytes: 150), logLevel: "info")
        let c = try h.client()
        for key in ["a", "b", "c"] { try c.putFile("media", key, try h.makeFile("\(key).bin", size: 100)) }
        #expect(try h.assetctl("enforce", "--dry-run").status == 0)
        #expect(!h.log.contains("deleted"), "\(h.log)")
        let run = try h.assetctl("enforce")
        #expect(run.status == 0, "\(run.stderr)")
        let commit = try #require(try c.call("ping")["commit"]?.intValue)
        let uid = geteuid()
        // Logged before the reply is written: there by the time assetctl has it.
        #expect(
            h.log.contains(
                "policy.enforce (uid \(uid)): deleted 2 objects, queued 2 files for unlinking, commit \(commit)\n"),
            "\(h.log)")
        #expect(try h.assetctl("evict", "--bytes", "1").status == 0)
        #expect(
            h.log.contains(
                "policy.evict (uid \(uid)): deleted 1 object, queued 1 file for unlinking, commit \(commit + 1)\n"),
            "\(h.log)")
    }
}
