// assetctl's usage errors and help as a first-time user meets them: a command or group
// without what it needs exits 64 with help on stderr, --help still succeeds on stdout, and
// --db never creates a database it was not given.

import AssetClient
import AssetStore
import Foundation
import Testing

extension CLITests {
    @Test(
        "assetctl with no command, or a group without its subcommand, prints help on stderr and exits 64",
        arguments: [
            [String](), ["edge"], ["template"], ["index"], ["lease"], ["--json"],
        ])
    func noCommand(_ args: [String]) throws {
        let r = try runProcess(Binaries.assetctl, args)
        #expect(r.status == 64, "\(args): \(r.stdout)\(r.stderr)")
        #expect(r.stdout == "")
        #expect(r.stderr.contains("USAGE: assetctl"), "\(r.stderr)")
    }

    @Test(
        "--help still prints help on stdout and exits 0",
        arguments: [["--help"], ["edge", "--help"], ["help", "lease"]])
    func helpStillSucceeds(_ args: [String]) throws {
        let r = try runProcess(Binaries.assetctl, args)
        #expect(r.status == 0, "\(args): \(r.stderr)")
        #expect(r.stdout.contains("USAGE: assetctl"))
    }

    @Test("edge add without --rules is a usage error and leaves the existing edge's rules alone")
    func edgeAddNeedsRules() throws {
        let h = try DaemonHarness()
        #expect(try h.assetctl("put", "thumbs", "a").status == 0)
        #expect(try h.assetctl("put", "originals", "a").status == 0)
        let rules = "deleteSourceIfDestinationDeleted"
        #expect(
            try h.assetctl("edge", "add", "original", "thumbs", "a", "originals", "a", "--rules", rules).status == 0)
        let again = try h.assetctl("edge", "add", "original", "thumbs", "a", "originals", "a")
        #expect(again.status == 64, "\(again.stderr)")
        #expect(again.stderr.contains("--rules"), "\(again.stderr)")
        let edges = try h.client().call("edge.find", ["name": "original"])["edges"]?.arrayValue ?? []
        #expect(edges.count == 1)
        #expect(edges.first?["rules"] == [.string(rules)], "\(edges)")
    }

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
