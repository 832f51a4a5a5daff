// `assetctl --db` on a config file with a [policy] value refused as a slip (a budget, quota or
// TTL of 0): enforce, and the evict and expire that would run the other quotas and TTLs without
// it, are refused with the daemon's own message and delete nothing; a backup, verify, stats or
// listing never is, and the forms the message advises still run.

import AssetService
import ControlProtocol
import Foundation
import JSON
import Testing

@Suite struct OfflinePolicyRefusalTests {
    /// A valid quota and TTL besides the refused value, each with an object under it: what an
    /// evict or expire run on the rest of the policy would delete.
    static let others =
        "[[policy.quota]]\nowner = \"bob\"\nmax_bytes = 1\n[[policy.ttl]]\ncollection = \"docs\"\nmax_age = \"1ms\"\n"
    /// Config text and the key the daemon refuses in it.
    static let refused: [(String, String)] = [
        ("[policy]\nmin_age = \"0s\"\nmax_bytes = 0\n" + others, "policy.max_bytes"),
        (
            "[policy]\nmin_age = \"0s\"\n[[policy.quota]]\nowner = \"alice\"\nmax_bytes = 0\n" + others,
            "policy.quota.max_bytes"
        ),
        (
            "[policy]\nmin_age = \"0s\"\n[[policy.ttl]]\ncollection = \"media\"\nmax_age = \"0s\"\n" + others,
            "policy.ttl.max_age"
        ),
    ]

    @Test("assetctl --db refuses enforce and a policy-wide evict or expire for a refused value", arguments: refused)
    func policyRunsRefused(text: String, key: String) throws {
        let h = try DaemonHarness()
        let file = try h.makeFile("kept.bin", size: 100)
        let other = try h.makeFile("other.bin", size: 100)
        try h.client().putFile("media", "kept", file, owner: "alice")
        try h.client().putFile("docs", "other", other, owner: "bob")
        #expect(h.stop() == 0)
        h.extraConfig = text
        try h.writeConfig()
        let daemon = try runAssetd(["--config", h.configPath, "--check-config"])
        #expect(daemon.status == 78, "\(daemon.stdout)\(daemon.stderr)")
        let line = try #require(daemon.stderr.split(separator: "\n").first { $0.contains(key) })
        let message = String(line[try #require(line.range(of: h.configPath)).lowerBound...])
        func db(_ args: [String]) throws -> ProcessResult {
            try runProcess(Binaries.assetctl, ["--db", h.database, "--config", h.configPath] + args)
        }
        for args in [["enforce"], ["expire"], ["expire", "--collection", "media"], ["evict", "--bytes", "1"]] {
            let r = try db(args)
            #expect(r.status == 78, "\(args): \(r.stdout)\(r.stderr)")
            #expect(r.stderr.contains(message), "\(args): \(r.stderr)\nwanted: \(message)")
        }
        #expect(h.exists(file) && h.exists(other))
        for args in [["verify"], ["backup", h.dir + "/copy.sqlite"], ["stats"], ["ls", "media"]] {
            let r = try db(args)
            #expect(r.status == 0, "\(args): \(r.stdout)\(r.stderr)")
            #expect(!r.stderr.contains(key), "\(args): \(r.stderr)")
        }
        // The socket mode reads the file for control.socket alone: not refused either.
        let status = try runProcess(Binaries.assetctl, ["--config", h.configPath, "stats"])
        #expect(!status.stderr.contains(key), "\(status.stderr)")
        #expect(status.status != 78, "\(status.stdout)\(status.stderr)")
        // What the messages advise runs, on its own objects alone.
        for args in [["evict", "--owner", "alice"], ["expire", "--collection", "media", "--older-than", "0s"]] {
            let r = try db(args)
            #expect(r.status == 0, "\(args): \(r.stdout)\(r.stderr)")
        }
        #expect(!h.exists(file))
        #expect(h.exists(other))
    }
}

@Suite struct LocalInvokerRefusalTests {
    @Test("LocalInvoker.call itself refuses enforce, evict and expire as assetctl --db does")
    func libraryCallerRefused() throws {
        let h = try DaemonHarness()
        let file = try h.makeFile("kept.bin", size: 100)
        try h.client().putFile("media", "kept", file, owner: "alice")
        #expect(h.stop() == 0)
        h.extraConfig = OfflinePolicyRefusalTests.refused[0].0
        try h.writeConfig()
        let local = try LocalInvoker(databasePath: h.database, configPath: h.configPath)
        defer { local.close() }
        let calls: [(String, JSONValue)] = [
            ("policy.enforce", [:]), ("policy.expire", ["collection": "media"]), ("policy.evict", ["bytes": 1]),
        ]
        for (method, params) in calls {
            let e = try #require(throws: RPCError.self) { try local.call(method, params) }
            #expect(e.stableCode == "invalid_params" && e.message.contains("policy.max_bytes"), "\(method): \(e)")
        }
        #expect(h.exists(file))
        _ = try local.call("policy.evict", ["owner": "alice"])
        #expect(!h.exists(file))
    }
}
