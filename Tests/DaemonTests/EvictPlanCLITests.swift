// What an eviction plan tells a person (assetctl(1), evict and enforce): why each object was
// chosen under the configured order, and what was passed over and why, with counts, in text
// and in --json.

import AssetStore
import Foundation
import Testing

@Suite("eviction plans in assetctl") struct EvictPlanCLITests {
    @Test("evict --dry-run on the default min_age says it skipped the young objects, in text and JSON")
    func skippedYoung() throws {
        let h = try DaemonHarness(extraConfig: "[policy]\nmax_bytes = \"1GiB\"\n")
        try populate(h, count: 3, size: 1000)
        let text = try h.assetctl("evict", "--bytes", "3MB", "--dry-run")
        #expect(text.status == 0, "\(text.stderr)")
        #expect(text.stdout.contains("would delete 0 objects"), "\(text.stdout)")
        #expect(text.stdout.contains("skipped 3 too young (policy.min_age)"), "\(text.stdout)")
        let json = try h.assetctl("--json", "evict", "--bytes", "3MB", "--dry-run")
        #expect(json.status == 0, "\(json.stderr)")
        let plan = try JSONValue.parse(json.stdout)
        #expect(plan["skipped"]?["too_young"] == .int(3), "\(json.stdout)")
    }

    @Test("enforce --dry-run shows why the order chose each object")
    func reasonUnderOrder() throws {
        let h = try DaemonHarness(extraConfig: policyConfig(maxBytes: 1) + "\norder = \"sieve\"\n")
        try populate(h, count: 3)
        let text = try h.assetctl("enforce", "--dry-run")
        #expect(text.status == 0, "\(text.stderr)")
        #expect(text.stdout.contains("WHY"), "\(text.stdout)")
        #expect(text.stdout.contains("sieve: not accessed since the hand last passed"), "\(text.stdout)")
        let plan = try JSONValue.parse(try h.assetctl("--json", "enforce", "--dry-run").stdout)
        #expect(
            plan["objects"]?.arrayValue?.first?["detail"] == .string("sieve: not accessed since the hand last passed"),
            "\(plan)")
    }

    /// "media/big", holding a file, whose deletion takes ten photos with it: 23 units of work,
    /// more than the budget of a batch of 1 (10).
    private func bigCascade(_ h: DaemonHarness) throws {
        let c = try h.client()
        try c.putObject("media", "big")  // no file yet: no byte target takes it before its edges
        for p in 0..<10 {
            try c.putObject("photo", "p\(p)")
            try c.call(
                "edge.add",
                [
                    "name": "in", "source": ref("media", "big"), "destination": ref("photo", "p\(p)"),
                    "rules": ["deleteDestinationIfSourceDeleted"],
                ])
        }
        try c.putFile("media", "big", try h.makeFile("big.bin", size: 100))
    }

    @Test("enforce says how many deletions went past a batch's work budget, in text and JSON")
    func oversizedShown() throws {
        let h = try DaemonHarness(extraConfig: policyConfig(maxBytes: 10, batch: 1))
        try bigCascade(h)
        let plan = try JSONValue.parse(try h.assetctl("--json", "enforce", "--dry-run").stdout)
        #expect(plan["oversized"] == 1, "\(plan)")
        let text = try h.assetctl("enforce")
        #expect(text.status == 0, "\(text.stderr)")
        #expect(text.stdout.contains("deleted 11 objects"), "\(text.stdout)")
        #expect(text.stdout.contains("1 deletion reached more than a batch's work budget"), "\(text.stdout)")
    }

    @Test("the policy timer logs a deletion that went past a batch's work budget")
    func oversizedLogged() throws {
        let h = try DaemonHarness(extraConfig: policyConfig(maxBytes: 10, batch: 1, interval: "1s"))
        try bigCascade(h)
        #expect(
            eventually(timeout: 60) { h.log.contains("work budget and went whole, the first \"media/big\"") },
            "\(h.log)")
    }
}
