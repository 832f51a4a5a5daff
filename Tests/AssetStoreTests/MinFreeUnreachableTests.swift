// A min_free the file system can never reach (assetd.toml(5), [policy]): evicting every file
// registered there would still fall short, so a run evicts nothing for it and says so, instead
// of emptying that file system's share of the cache at every run. Runs on the test machine's
// own disk: no file system has 10^18 bytes free.

import AssetStore
import AssetStoreTestSupport
import Foundation
import Testing

@Suite struct MinFreeUnreachableTests {
    func filled() throws -> Fixture {
        let f = try Fixture()
        for i in 0..<5 {
            try f.put([(ref("c", "k\(i)"), ["file": .string(try f.makeFile("f\(i)", size: 1000))])])
            f.clock.advance(1)
        }
        f.clock.advance(3600)
        return f
    }

    func unreachable() -> PolicyConfiguration {
        var p = PolicyConfiguration()
        p.minFree = 1_000_000_000_000_000_000
        return p
    }

    @Test("a min_free out of reach evicts nothing, in a real run and a dry run, and the plan names it")
    func evictsNothing() throws {
        let f = try filled()
        f.store.policy = unreachable()
        let dry = try f.store.enforce(dryRun: true)
        #expect(dry.objects.isEmpty)
        let plan = try f.store.enforce()
        #expect(plan.objects.isEmpty, "\(plan.objects.map(\.ref.key))")
        let s = try #require(plan.unreachableMinFree.first)
        // Free space moves with whatever else writes to the disk: only the file system is compared.
        #expect(plan.unreachableMinFree.count == 1 && dry.unreachableMinFree.map(\.device) == [s.device])
        #expect(s.minFree == 1_000_000_000_000_000_000 && s.reachable >= s.free + 5000)
        for i in 0..<5 { #expect(try f.exists(ref("c", "k\(i)")) && f.exists(f.root + "/f\(i)")) }
    }

    @Test("the other steps of the run still go: the byte budget evicts as before")
    func budgetStillRuns() throws {
        let f = try filled()
        var p = unreachable()
        p.maxBytes = 3000
        p.lowWater = 1
        p.order = .lru
        f.store.policy = p
        let plan = try f.store.enforce()
        #expect(plan.objects.map(\.ref.key) == ["k0", "k1"])
        #expect(plan.objects.allSatisfy { $0.reason == .budget })
        #expect(plan.unreachableMinFree.count == 1)
    }

    @Test("a min_free met already is not judged: no shortfall is reported")
    func metIsQuiet() throws {
        let f = try filled()
        var p = PolicyConfiguration()
        p.minFree = 1
        f.store.policy = p
        let plan = try f.store.enforce()
        #expect(plan.objects.isEmpty && plan.unreachableMinFree.isEmpty)
    }
}
