// `assetctl --db` on a config file with a [policy] value refused as a slip (a budget, quota or
// TTL of 0): only enforce, which would run the policy, is refused, with the daemon's own
// message; a backup, verify, stats or listing never is, and the value is never applied.

import Foundation
import Testing

@Suite struct OfflinePolicyRefusalTests {
    /// Config text and the key the daemon refuses in it.
    static let refused: [(String, String)] = [
        ("[policy]\nmin_age = \"0s\"\nmax_bytes = 0\n", "policy.max_bytes"),
        ("[policy]\nmin_age = \"0s\"\n[[policy.quota]]\nowner = \"alice\"\nmax_bytes = 0\n", "policy.quota.max_bytes"),
        (
            "[policy]\nmin_age = \"0s\"\n[[policy.ttl]]\ncollection = \"media\"\nmax_age = \"0s\"\n",
            "policy.ttl.max_age"
        ),
    ]

    @Test("assetctl --db refuses only enforce for a refused policy value, as assetd does", arguments: refused)
    func onlyEnforceRefused(text: String, key: String) throws {
        let h = try DaemonHarness()
        let file = try h.makeFile("kept.bin", size: 100)
        try h.client().putFile("media", "kept", file, owner: "alice")
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
        let enforce = try db(["enforce"])
        #expect(enforce.status == 78, "\(enforce.stdout)\(enforce.stderr)")
        #expect(enforce.stderr.contains(message), "\(enforce.stderr)\nwanted: \(message)")
        for args in [["verify"], ["backup", h.dir + "/copy.sqlite"], ["stats"], ["ls", "media"]] {
            let r = try db(args)
            #expect(r.status == 0, "\(args): \(r.stdout)\(r.stderr)")
            #expect(!r.stderr.contains(key), "\(args): \(r.stderr)")
        }
        // The socket mode reads the file for control.socket alone: not refused either.
        let status = try runProcess(Binaries.assetctl, ["--config", h.configPath, "stats"])
        #expect(!status.stderr.contains(key), "\(status.stderr)")
        #expect(status.status != 78, "\(status.stdout)\(status.stderr)")
        #expect(h.exists(file))
    }
}
