// Property test for policies: on stores built by random operations (the same generator as
// PropertyTests, so cascades, deny edges, shared files and templates all occur), with a
// random policy and random pins, a dry run's plan equals the real run, nothing protected is
// deleted, and I1–I5 still hold afterwards.

import Foundation
import PropertyBased
import Testing
@testable import AssetStore
import AssetStoreTestSupport

@Suite struct PolicyPropertyTests {
    @Test("after random operations, any policy's dry run equals its real run and spares what is protected")
    func randomPolicies() async {
        await propertyCheck(count: 40, input: Gen.int(in: 0...9_999_999).array(of: 10...60)) { ops in
            let run = try PropertyTests.Run()
            try run.run(ops)
            let f = run.f
            let seed = ops.reduce(0, &+)
            f.clock.advance(Double(seed % 60))
            var p = PolicyConfiguration()
            p.minAge = Double(seed % 40)
            p.batch = 1 + seed % 4
            if seed % 3 != 0 { p.maxBytes = Int64(seed % 120) }
            p.lowWater = [0.5, 0.9, 1][seed % 3]
            if seed % 2 == 0 { p.quotas = [.init(owner: "o\(seed % 3)", maxBytes: Int64(seed % 50))] }
            if seed % 5 < 2 { p.ttls = [.init(collection: "p", maxIdle: Double(seed % 30), maxAge: nil)] }
            f.store.policy = p
            let pinned = [ref("p", PropertyTests.keys[seed % PropertyTests.keys.count])]
            var protected = Set<ObjectRef>()
            try f.store.write { tx in
                for r in pinned where try tx.exists(r) {
                    try tx.pin(r)
                    protected.insert(r)
                }
            }
            let young = try f.store.read { r in
                try PropertyTests.keys.compactMap { try r.get(ref("p", $0)) }
            }.filter { $0.created > f.clock.now - p.minAge }.map(\.ref)
            protected.formUnion(young)
            let before = try run.snapshot()
            let dry = try f.store.enforce(dryRun: true)
            #expect(try run.snapshot() == before, "a dry run changed the store")
            let real = try f.store.enforce()
            #expect(real.objects == dry.objects && real.files == dry.files && real.bytes == dry.bytes)
            for r in protected { #expect(try f.store.read { try $0.exists(r) }, "\(r) was protected") }
            #expect(real.objects.allSatisfy { !protected.contains($0.ref) })
            run.queuedEver.formUnion(real.files)
            try run.checkInvariants(afterSweep: false)
            _ = try f.store.sweep()
            try run.checkInvariants(afterSweep: true)
        }
    }
}
