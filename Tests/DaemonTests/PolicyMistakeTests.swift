// Careless [policy] values (assetd.toml(5), [policy]): those that can only be a slip and would
// empty the cache at every run are refused wherever the file is read (start, --check-config,
// SIGHUP, assetctl --db), naming the setting and the command that does it on purpose; legal
// but dangerous ones are accepted with one warning naming the file, line and key.

import AssetStore
import AssetStoreTestSupport
import Foundation
import Testing
@testable import AssetDaemon
@testable import AssetService

@Suite struct PolicyMistakeTests {
    func parse(_ text: String) throws(ConfigError) -> DaemonConfig {
        let defaults = DaemonConfig.embeddedDefaults(uid: 1000, environment: ["HOME": "/home/u"])
        return try ConfigParser(file: "/etc/assetd/p.toml", text: text).parse(defaults: defaults)
    }

    /// Text, line, key, the edit for "no limit" or "never expire" that the error leads with,
    /// and the command that does it once on purpose, which must come after it.
    static let refused: [(String, Int, String, String, String?)] = [
        (
            "[policy]\nmax_bytes = 0\n", 2, "policy.max_bytes", "remove max_bytes for no budget",
            "`assetctl expire --older-than 0s`"
        ),
        (
            "[policy]\nmax_bytes = \"0GiB\"\n", 2, "policy.max_bytes", "remove max_bytes for no budget",
            "`assetctl expire --older-than 0s`"
        ),
        (
            "[policy]\n[[policy.quota]]\nowner = \"alice\"\nmax_bytes = 0\n", 4, "policy.quota.max_bytes",
            "remove this [[policy.quota]] for no quota", "`assetctl evict --owner alice`"
        ),
        (
            "[policy]\n[[policy.ttl]]\ncollection = \"thumbs\"\nmax_idle = \"0s\"\n", 4, "policy.ttl.max_idle",
            "remove max_idle to never expire", "`assetctl expire --collection thumbs --older-than 0s`"
        ),
        (
            "[policy]\n[[policy.ttl]]\ncollection = \"thumbs\"\nmax_idle = \"1d\"\nmax_age = 0\n", 5,
            "policy.ttl.max_age", "remove max_age to never expire", "`assetctl expire --collection thumbs"
        ),
        // Refused before: min_free is a size, never a share of the disk.
        ("[policy]\nmin_free = \"100%\"\n", 2, "policy.min_free", "must be a size", nil),
    ]

    @Test(
        "a budget, quota or TTL of 0 is refused, naming the line, the key, the edit for no limit and then what to run",
        arguments: refused)
    func refusedAtLoad(text: String, line: Int, key: String, lead: String, command: String?) {
        do {
            let c = try parse(text)
            Issue.record("accepted:\n\(text)\npolicy: \(String(describing: c.policy))")
        } catch {
            #expect(error.key == key && error.line == line, "\(error)")
            let m = error.message
            let l = m.range(of: lead)
            #expect(l != nil, "\(error)")
            if let command, let l {
                #expect(m.range(of: command).map { l.upperBound <= $0.lowerBound } == true, "\(error)")
            }
        }
    }

    static let warned: [(String, Int, String, String)] = [
        ("[policy]\nmax_bytes = 10\n", 2, "policy.max_bytes", "write \"10GiB\""),
        ("[policy]\nmax_bytes = \"512KiB\"\n", 2, "policy.max_bytes", "a budget of 524288 bytes"),
        ("[policy]\n[[policy.quota]]\nowner = \"bob\"\nmax_bytes = 1000\n", 4, "policy.quota.max_bytes", "a quota"),
        // Peer names: a user named "#alice" is "#" and its uid now, never "#alice".
        (
            "[policy]\n[[policy.quota]]\nowner = \"#alice\"\nmax_bytes = \"1GiB\"\n", 3, "policy.quota.owner",
            "write the uid"
        ),
        ("[policy]\n[[policy.quota]]\nowner = \"#\"\nmax_bytes = \"1GiB\"\n", 3, "policy.quota.owner", "no client"),
        // Digits no uid is written with: PeerIdentity never makes "#01001".
        (
            "[policy]\n[[policy.quota]]\nowner = \"#01001\"\nmax_bytes = \"1GiB\"\n", 3, "policy.quota.owner",
            "no client"
        ),
        (
            "[policy]\n[[policy.ttl]]\ncollection = \"thumbs\"\nmax_idle = 30\n", 4, "policy.ttl.max_idle",
            "write \"30d\""
        ),
        ("[policy]\nmax_bytes = \"50GiB\"\nlow_water = \"0.9%\"\n", 3, "policy.low_water", "0.9%"),
    ]

    @Test("a tiny budget, quota or TTL and a low low_water are accepted with one warning", arguments: warned)
    func warnedAtLoad(text: String, line: Int, key: String, hint: String) throws {
        let c = try parse(text)
        #expect(c.policy != nil)
        #expect(c.policyWarnings.count == 1, "\(c.policyWarnings)")
        let w = try #require(c.policyWarnings.first)
        #expect(w.hasPrefix("/etc/assetd/p.toml:\(line): \(key): ") && w.contains(hint), "\(w)")
    }

    @Test("with a refused entry left out (assetctl --db), later entries' warnings name their own lines")
    func warningsAfterRefusedEntry() throws {
        let text = """
            [policy]
            [[policy.quota]]
            owner = "alice"
            max_bytes = 0
            [[policy.quota]]
            owner = "bob"
            max_bytes = 100
            [[policy.ttl]]
            collection = "a"
            max_age = "0s"
            [[policy.ttl]]
            collection = "b"
            max_idle = 30
            """
        var parser = ConfigParser(file: "/etc/assetd/p.toml", text: text)
        parser.deferPolicyRefusals = true
        let c = try parser.parse(defaults: DaemonConfig.embeddedDefaults(uid: 1000, environment: ["HOME": "/home/u"]))
        let w = c.policyWarnings
        #expect(w.contains { $0.hasPrefix("/etc/assetd/p.toml:7: policy.quota.max_bytes: ") && $0.contains("100GiB") })
        #expect(
            w.contains { $0.hasPrefix("/etc/assetd/p.toml:13: policy.ttl.max_idle: ") && $0.contains("30d") }, "\(w)")
    }

    @Test("ordinary values, and a quota larger than the budget, warn of nothing")
    func ordinaryQuiet() throws {
        let c = try parse(
            """
            [policy]
            max_bytes = "50GiB"
            low_water = "90%"
            min_free  = "5GiB"
              [[policy.quota]]
              owner     = "alice"
              max_bytes = "100GiB"
              [[policy.quota]]
              owner     = "#5000"
              max_bytes = "100GiB"
              [[policy.ttl]]
              collection = "thumbs"
              max_idle   = "1m"
            """)
        #expect(c.policyWarnings.isEmpty, "\(c.policyWarnings)")
    }

    @Test("min_free past a root's whole file system is refused; at or past its usable size, warned of")
    func minFreeOverCapacity() throws {
        let text = "[files]\nroots = [\"/srv/a\", \"/srv/b\"]\n[policy]\nmin_free = \"5GiB\"\n"
        let gib: Int64 = 1 << 30
        func judged(_ b: FileSystemSize) throws(ConfigError) -> DaemonConfig {
            var c = try parse(text)
            try c.checkMinFree { $0 == "/srv/b" ? b : FileSystemSize(total: 100 * gib, usable: 95 * gib) }
            return c
        }
        #expect(try judged(FileSystemSize(total: 6 * gib, usable: 5 * gib + 1)).policyWarnings.isEmpty)
        // At or above what could be free, but within the disk: that size moves (ZFS, btrfs), so
        // a file that worked yesterday must not stop the daemon today.
        for b in [FileSystemSize(total: 6 * gib, usable: 5 * gib), FileSystemSize(total: 5 * gib, usable: 4 * gib)] {
            let w = try judged(b).policyWarnings
            #expect(w.count == 1, "\(w)")
            #expect(w.first?.hasPrefix("/etc/assetd/p.toml:4: policy.min_free: ") == true, "\(w)")
            #expect(w.first?.contains("/srv/b") == true, "\(w)")
        }
        var none = try parse(text)
        try none.checkMinFree { _ in nil }  // nothing readable: judged at the next start
        #expect(none.policyWarnings.isEmpty)
        do {
            _ = try judged(FileSystemSize(total: 5 * gib - 1, usable: 4 * gib))
            Issue.record("accepted")
        } catch {
            #expect(error.key == "policy.min_free" && error.line == 4, "\(error)")
            #expect(error.message.hasPrefix("remove min_free for no floor"), "\(error)")
            #expect(error.message.contains("/srv/b") && error.message.contains("assetctl evict --bytes"), "\(error)")
        }
        var noFloor = try parse("[policy]\nmax_bytes = \"1GiB\"\n")
        try noFloor.checkMinFree { _ in FileSystemSize(total: 0, usable: 0) }  // no min_free: nothing to judge
    }

    @Test("min_free is judged against the real file system of a root, or of its nearest parent (statvfs)")
    func minFreeRealFileSystem() throws {
        let temp = TempFolders(prefix: "assetd-minfree-")
        let root = try temp.make()
        let size = try #require(DaemonConfig.fileSystemSize(of: root))
        #expect(size.usable > 0 && size.total >= size.usable)
        // A root not created yet is on its nearest existing parent's file system.
        #expect(DaemonConfig.fileSystemSize(of: root + "/not/yet") == size)
        for r in [root, root + "/not/yet"] {
            var c = try parse("[files]\nroots = [\"\(r)\"]\n[policy]\nmin_free = \"1000000TB\"\n")
            #expect(throws: ConfigError.self) { try c.checkMinFree() }
        }
        var half = try parse("[files]\nroots = [\"\(root)\"]\n[policy]\nmin_free = \(size.usable / 2)\n")
        try half.checkMinFree()
        var whole = try parse("[files]\nroots = [\"\(root)\"]\n[policy]\nmin_free = \(size.total)\n")
        try whole.checkMinFree()
        #expect(whole.policyWarnings.count == 1, "\(whole.policyWarnings)")
    }

    @Test("a file system's size past Int64 reads as Int64.max, not as a wrapped small number")
    func fileSystemSizeSaturates() {
        #expect(DaemonConfig.bytes(blocks: 1 << 40, blockSize: 1 << 30) == .max)
        #expect(DaemonConfig.bytes(blocks: UInt64.max, blockSize: 2) == .max)
        #expect(DaemonConfig.bytes(blocks: 1 << 20, blockSize: 4096) == 1 << 32)
    }

    @Test("assetd --check-config exits 78 for max_bytes = 0 and for min_free past the disk; warns of max_bytes = 10")
    func checkConfig() throws {
        let zero = try DaemonHarness(extraConfig: "[policy]\nmax_bytes = 0\n", start: false)
        let r = try runAssetd(["--config", zero.configPath, "--check-config"])
        #expect(r.status == 78, "\(r.stdout)\(r.stderr)")
        #expect(r.stderr.contains("policy.max_bytes") && r.stderr.contains("assetctl expire"), "\(r.stderr)")

        let huge = try DaemonHarness(extraConfig: "[policy]\nmin_free = \"1000000TB\"\n", start: false)
        let h = try runAssetd(["--config", huge.configPath, "--check-config"])
        #expect(h.status == 78, "\(h.stdout)\(h.stderr)")
        #expect(h.stderr.contains("policy.min_free") && h.stderr.contains(huge.root), "\(h.stderr)")

        // The whole disk, not past it: warned of, and accepted.
        let disk = try #require(DaemonConfig.fileSystemSize(of: huge.root)?.total)
        let full = try DaemonHarness(extraConfig: "[policy]\nmin_free = \(disk)\n", start: false)
        let f = try runAssetd(["--config", full.configPath, "--check-config"])
        #expect(f.status == 0, "\(f.stdout)\(f.stderr)")
        #expect(f.stderr.contains("warning") && f.stderr.contains("policy.min_free"), "\(f.stderr)")

        let tiny = try DaemonHarness(extraConfig: "[policy]\nmax_bytes = 10\n", start: false)
        let t = try runAssetd(["--config", tiny.configPath, "--check-config"])
        #expect(t.status == 0, "\(t.stdout)\(t.stderr)")
        #expect(t.stderr.contains("warning") && t.stderr.contains("policy.max_bytes"), "\(t.stderr)")
        #expect(t.stdout.contains("policy.max_bytes = 10"))
    }

    @Test("SIGHUP with max_bytes = 0 keeps the budget in force: enforce then deletes nothing")
    func reloadRefusesZeroBudget() throws {
        let h = try DaemonHarness(extraConfig: policyConfig(maxBytes: 1 << 30))
        let c = try h.client()
        var files = [String]()
        for i in 0..<3 {
            files.append(try h.makeFile("m\(i).bin", size: 100))
            try c.putFile("media", "m\(i)", files[i])
        }
        h.extraConfig = policyConfig(maxBytes: 0)
        try h.writeConfig()
        kill(h.process!.processIdentifier, SIGHUP)  // started above
        #expect(eventually { h.log.contains("reload failed") }, "\(h.log.suffix(2000))")
        #expect(h.log.contains("policy.max_bytes"))
        let plan = try c.call("policy.enforce")
        #expect(plan["objects"] == [], "\(plan.serialized())")
        #expect(files.allSatisfy(h.exists))
    }

    @Test("SIGHUP with min_free past any disk fails, naming it, and keeps the policy in force")
    func reloadRefusesMinFreePastDisk() throws {
        let h = try DaemonHarness(extraConfig: policyConfig(maxBytes: 1 << 30))
        let c = try h.client()
        var files = [String]()
        for i in 0..<3 {
            files.append(try h.makeFile("f\(i).bin", size: 100))
            try c.putFile("media", "f\(i)", files[i])
        }
        // Parses (a size), so only the check against the roots' file systems can refuse it.
        h.extraConfig = policyConfig(maxBytes: 1 << 30) + "\nmin_free = \"1000000TB\"\n"
        try h.writeConfig()
        kill(h.process!.processIdentifier, SIGHUP)  // started above
        #expect(eventually { h.log.contains("reload failed") }, "\(h.log.suffix(2000))")
        #expect(h.log.contains("policy.min_free") && h.log.contains(h.root), "\(h.log.suffix(2000))")
        // The 1 GiB budget alone is in force: nothing is over it, so nothing goes.
        let plan = try c.call("policy.enforce")
        #expect(plan["objects"] == [], "\(plan.serialized())")
        #expect(files.allSatisfy(h.exists))
    }

    @Test("a reload with a [policy] assetd warns of is refused, naming it: the budget in force stays")
    func reloadRefusesWarnedPolicy() throws {
        let h = try DaemonHarness(extraConfig: policyConfig(maxBytes: 1 << 30))
        let c = try h.client()
        let file = try h.makeFile("kept.bin", size: 100)
        try c.putFile("media", "kept", file)
        // 50000000 cut short while being written reads as 5: a budget of 5 bytes.
        h.extraConfig = policyConfig(maxBytes: 5)
        try h.writeConfig()
        kill(h.process!.processIdentifier, SIGHUP)  // started above
        #expect(eventually { h.log.contains("reload failed") }, "\(h.log.suffix(2000))")
        #expect(h.log.contains("policy.max_bytes: a budget of 5 bytes"), "\(h.log.suffix(2000))")
        #expect(h.log.components(separatedBy: "a budget of 5 bytes").count == 2)
        let plan = try c.call("policy.enforce")
        #expect(plan["objects"] == [], "\(plan.serialized())")
        #expect(h.exists(file))
    }

    @Test("assetctl --db refuses enforce with a min_free past the disk, naming it; verify still runs")
    func offlineRefusesMinFree() throws {
        let h = try DaemonHarness()
        let file = try h.makeFile("kept.bin", size: 100)
        try h.client().putFile("media", "kept", file)
        #expect(h.stop() == 0)
        h.extraConfig = "[policy]\nmin_age = \"0s\"\nmin_free = \"1000000TB\"\n"
        try h.writeConfig()
        let r = try runProcess(Binaries.assetctl, ["--db", h.database, "--config", h.configPath, "enforce"])
        #expect(r.status != 0, "\(r.stdout)\(r.stderr)")
        #expect(r.stderr.contains("policy.min_free"), "\(r.stderr)")
        #expect(h.exists(file))
        // Only enforce runs the policy: a verify (or backup, or restore) must never be refused.
        let v = try runProcess(Binaries.assetctl, ["--db", h.database, "--config", h.configPath, "verify"])
        #expect(v.status == 0, "\(v.stdout)\(v.stderr)")
        #expect(!v.stderr.contains("policy.min_free"), "\(v.stderr)")
    }
}
