// What a client's policy run unlinks beside its batches is logged as the daemon's own sweep
// is (assetd(8)): a file skipped because it is no longer the one registered leaves a warning,
// whoever ran the policy.

import Foundation
import JSON
import Testing

@Suite struct PolicySweepLogTests {
    @Test("a client's policy.enforce logs the unlinks it skipped beside its batches")
    func clientRunLogsSkippedUnlinks() throws {
        let h = try DaemonHarness(extraConfig: policyConfig(maxBytes: 1, batch: 1) + "\norder = \"lru\"\n")
        let c = try h.client()
        let first = try h.makeFile("first.bin", size: 10)
        try c.putFile("media", "first", first)
        for i in 0..<4 { try c.putFile("media", "m\(i)", try h.makeFile("m\(i).bin", size: 10)) }
        // Another file now stands at the registered path: the unlink must skip it.
        try FileManager.default.removeItem(atPath: first)
        _ = try h.makeFile("first.bin", size: 20)
        let plan = try c.call("policy.enforce")
        #expect(plan["objects"]?.arrayValue?.count == 5, "\(plan.serialized())")
        #expect(eventually { h.log.contains("unlink skipped: \(first)") }, "\(h.log)")
        #expect(h.exists(first), "not the registered file: kept")
    }
}
