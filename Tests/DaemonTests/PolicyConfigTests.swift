// `[policy]` and `files.skip_open` in the config file (assetd.toml(5), [policy] and
// [files]): every key read into the engine's settings, the defaults documented there, and
// errors that name the file, line and key.

import AssetStore
import Foundation
import Testing
@testable import AssetDaemon
@testable import AssetService

@Suite struct PolicyConfigTests {
    func parse(_ text: String) throws(ConfigError) -> DaemonConfig {
        let defaults = DaemonConfig.embeddedDefaults(uid: 1000, environment: ["HOME": "/home/u"])
        return try ConfigParser(file: "/etc/assetd/p.toml", text: text).parse(defaults: defaults)
    }

    @Test("every [policy] key, quotas and TTLs are read into the store's settings")
    func everyKey() throws {
        let c = try parse(
            """
            [files]
            roots = ["/srv/cache"]
            skip_open = true
            orphan_grace = "2h"
            [policy]
            interval  = "1m"
            max_bytes = "50GiB"
            low_water = "80%"
            min_free  = "5GiB"
            min_age   = "30s"
            batch     = 250
              [[policy.quota]]
              owner     = "alice"
              max_bytes = "10GiB"
              [[policy.quota]]
              owner     = "bob"
              max_bytes = 1000
              [[policy.ttl]]
              collection = "thumbnails"
              max_idle   = "30d"
              max_age    = "180d"
              [[policy.ttl]]
              collection = "previews"
              max_age    = "1h"
            """)
        let p = try #require(c.policy)
        let gib: Int64 = 1 << 30
        #expect(p.interval == 60)
        #expect(p.maxBytes == 50 * gib)
        #expect(p.lowWater == 0.8)
        #expect(p.minFree == 5 * gib)
        #expect(p.minAge == 30 && p.batch == 250)
        let quotas: [PolicyConfiguration.Quota] = [
            .init(owner: "alice", maxBytes: 10 * gib), .init(owner: "bob", maxBytes: 1000),
        ]
        #expect(p.quotas == quotas)
        let ttls: [PolicyConfiguration.TTL] = [
            .init(collection: "thumbnails", maxIdle: 30 * 86_400, maxAge: 180 * 86_400),
            .init(collection: "previews", maxIdle: nil, maxAge: 3600),
        ]
        #expect(p.ttls == ttls)
        let s = c.storeConfiguration()
        #expect(s.policy == p && s.skipOpenFiles && s.orphanGrace == 7200)
        let summary = c.summary
        #expect(summary.contains("policy.max_bytes = \(50 * gib)"))
        #expect(summary.contains("policy.low_water = 80%"))
        #expect(summary.contains("files.skip_open = true"))
        #expect(summary.contains("policy.quota alice = \(10 * gib)"))
    }

    @Test("an empty [policy] takes the defaults of assetd.toml(5); without one there is no policy")
    func defaults() throws {
        let p = try #require(try parse("[policy]\n").policy)
        #expect(p == PolicyConfiguration())
        #expect(p.interval == 300 && p.lowWater == 0.9 && p.minAge == 600 && p.batch == 1000)
        #expect(p.order == .s3fifo)
        #expect(p.maxBytes == nil && p.minFree == nil && p.quotas.isEmpty && p.ttls.isEmpty)
        let none = try parse("")
        #expect(none.policy == nil && none.storeConfiguration().policy == nil && !none.skipOpenFiles)
        #expect(none.summary.contains { $0.hasPrefix("policy = (none") })
    }

    @Test(
        "low_water is a percentage or a fraction",
        arguments: [("\"90%\"", 0.9), ("0.5", 0.5), ("\"100%\"", 1.0), ("1", 1.0)])
    func lowWater(text: String, share: Double) throws {
        #expect(try parse("[policy]\nlow_water = \(text)\n").policy?.lowWater == share)
    }

    static let errors: [(String, Int, String)] = [
        ("[policy]\nmax_byte = \"1GiB\"\n", 2, "policy.max_byte"),
        ("[policy]\ninterval = \"often\"\n", 2, "policy.interval"),
        ("[policy]\ninterval = \"0s\"\n", 2, "policy.interval"),
        // Past what a timer can count (the daemon trapped starting it) or not a number at all.
        ("[policy]\ninterval = \"1e300\"\n", 2, "policy.interval"),
        ("[policy]\ninterval = \"400000000000000d\"\n", 2, "policy.interval"),
        ("[policy]\ninterval = \"inf\"\n", 2, "policy.interval"),
        ("[policy]\nmin_age = \"inf\"\n", 2, "policy.min_age"),
        ("[policy]\nmax_bytes = \"lots\"\n", 2, "policy.max_bytes"),
        ("[policy]\nmin_free = -1\n", 2, "policy.min_free"),
        ("[policy]\nmin_age = true\n", 2, "policy.min_age"),
        ("[policy]\nlow_water = \"0%\"\n", 2, "policy.low_water"),
        ("[policy]\nlow_water = \"120%\"\n", 2, "policy.low_water"),
        ("[policy]\nlow_water = 1.5\n", 2, "policy.low_water"),
        ("[policy]\nbatch = 0\n", 2, "policy.batch"),
        ("[policy]\nbatch = 100001\n", 2, "policy.batch"),
        ("[policy]\nbatch = \"10\"\n", 2, "policy.batch"),
        ("[policy]\n[[policy.quota]]\nowner = \"a\"\nmax_bytes = \"1GiB\"\nmaxbytes = 1\n", 5, "policy.quota.maxbytes"),
        ("[policy]\n[[policy.quota]]\nowner = \"a\"\n", 2, "policy.quota.max_bytes"),
        ("[policy]\n[[policy.quota]]\nmax_bytes = 1\n", 2, "policy.quota.owner"),
        (
            "[policy]\n[[policy.quota]]\nowner = \"a\"\nmax_bytes = 1\n[[policy.quota]]\nowner = \"a\"\nmax_bytes = 2\n",
            6, "policy.quota.owner"
        ),
        ("[policy]\n[[policy.ttl]]\ncollection = \"c\"\nmax_idle = \"1x\"\n", 4, "policy.ttl.max_idle"),
        ("[policy]\n[[policy.ttl]]\ncollection = \"c\"\n", 2, "policy.ttl.max_idle"),
        ("[policy]\n[[policy.ttl]]\nmax_age = \"1d\"\n", 2, "policy.ttl.collection"),
        ("[policy]\n[[policy.ttl]]\ncollection = \"c\"\nmax_age = \"1d\"\nidle = \"1d\"\n", 5, "policy.ttl.idle"),
        (
            "[policy]\n[[policy.ttl]]\ncollection = \"c\"\nmax_age = \"1d\"\n[[policy.ttl]]\ncollection = \"c\"\nmax_age = \"2d\"\n",
            6, "policy.ttl.collection"
        ),
        ("[files]\nskip_open = \"yes\"\n", 2, "files.skip_open"),
    ]

    @Test("collections whose names differ only in their bytes get a TTL and templates each")
    func lookAlikeCollections() throws {
        let (composed, decomposed) = ("caf\u{e9}", "cafe\u{301}")
        let c = try parse(
            """
            [[collections]]
            name = "\(composed)"
              [[collections.edges]]
              name = "original"
              field = "orig"
              to = "originals"
            [[collections]]
            name = "\(decomposed)"
              [[collections.edges]]
              name = "source"
              field = "src"
              to = "originals"
            [policy]
              [[policy.ttl]]
              collection = "\(composed)"
              max_age = "1d"
              [[policy.ttl]]
              collection = "\(decomposed)"
              max_age = "2d"
            """)
        let ttls = c.policy?.ttls ?? []
        #expect(ttls.count == 2)
        #expect(ttls.first { $0.collection.utf8.elementsEqual(decomposed.utf8) }?.maxAge == 172_800.0)
        #expect(c.templates[UTF8Key(composed)]?.map(\.name) == ["original"])
        #expect(c.templates[UTF8Key(decomposed)]?.map(\.name) == ["source"])
    }

    @Test("a wrong [policy] names the file, the line and the key", arguments: errors)
    func errorsNameLineAndKey(text: String, line: Int, key: String) {
        do {
            _ = try parse(text)
            Issue.record("accepted:\n\(text)")
        } catch {
            #expect(error.file == "/etc/assetd/p.toml")
            #expect(error.key == key, "\(error)")
            #expect(error.line == line, "\(error)")
        }
    }

    @Test("the commented [policy] example of etc/assetd.toml parses once uncommented, with the documented defaults")
    func shippedPolicyExample() throws {
        let path = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("etc/assetd.toml").path
        let text = try String(contentsOfFile: path, encoding: .utf8)
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        let start = try #require(lines.firstIndex { $0.hasPrefix("# [policy]") })
        let uncommented = lines[start...].compactMap { line -> String? in
            let body = line.drop { $0 == "#" || $0 == " " }
            return body.contains("=") || body.hasPrefix("[") ? String(body) : nil
        }
        let p = try #require(try parse(uncommented.joined(separator: "\n")).policy)
        #expect(p.interval == 300 && p.lowWater == 0.9 && p.minAge == 600 && p.batch == 1000)
        #expect(p.order == PolicyConfiguration().order)
        #expect(
            p.maxBytes == 50 * (1 << 30) && p.quotas.map(\.owner) == ["alice"]
                && p.ttls.map(\.collection) == ["thumbnails"])
        #expect(
            try ConfigParser(file: path, text: text).parse(defaults: .embeddedDefaults(uid: 0, environment: [:]))
                .skipOpenFiles == false)
    }

    @Test("assetd --check-config exits 78 for a policy typo and names it")
    func checkConfigExits78() throws {
        let h = try DaemonHarness(extraConfig: "[policy]\nmax_byts = \"1GiB\"\n", start: false)
        let r = try runAssetd(["--config", h.configPath, "--check-config"])
        #expect(r.status == 78, "\(r.stdout)\(r.stderr)")
        #expect(r.stderr.contains("policy.max_byts") && r.stderr.contains(h.configPath))
    }
}
