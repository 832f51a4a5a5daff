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
}
