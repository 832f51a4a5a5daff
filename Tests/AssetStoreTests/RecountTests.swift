// The byte budget and the quotas count again before a step ends only where the count down can
// be off: names of one file evicted together each count, which needs a file listed as shared.
// With nothing listed the count down is exact, and the recount (a total over every file at
// the budget) is not run.

import AssetStoreTestSupport
import Foundation
import GRDB
import Synchronization
import Testing

@testable import AssetStore

@Suite("Recounts before a step ends")
struct RecountTests {
    /// A fixture with `policy`, four 1,000-byte files held by objects k0…k3 of owner `o`, and,
    /// with `shared`, a hard link of k3's file held by `o`'s object `link`.
    private func fixture(shared: Bool, _ configure: (inout PolicyConfiguration) -> Void) throws -> Fixture {
        let f = try Fixture {
            var p = PolicyConfiguration()
            p.minAge = 0
            p.order = .lru
            configure(&p)
            $0.policy = p
        }
        for i in 0..<4 {
            try f.put([(ref("c", "k\(i)"), ["file": .string(try f.makeFile("f\(i)", size: 1000))])], owner: "o")
            f.clock.advance(1)
        }
        if shared {
            #expect(link(f.root + "/f3", f.root + "/l3") == 0)
            try f.put([(ref("c", "link"), ["file": .string(f.root + "/l3")])], owner: "o")
        }
        return f
    }

    /// How many statements the writer starts while `body` runs whose SQL `match` accepts.
    private func statements(
        _ f: Fixture, _ match: @escaping @Sendable (String) -> Bool, _ body: () throws -> Void
    )
        throws -> Int
    {
        let n = Mutex(0)
        try f.store.write { tx in
            tx.db.trace(options: .statement) { e in if match(e.description) { n.withLock { $0 += 1 } } }
        }
        defer { _ = try? f.store.write { tx in tx.db.trace(options: .statement, nil) } }
        try body()
        return n.withLock { $0 }
    }

    @Test(
        "the budget counts its total once a batch when no file is shared, twice when one is", arguments: [false, true])
    func budget(shared: Bool) throws {
        let f = try fixture(shared: shared) {
            $0.maxBytes = 3500
            $0.lowWater = 0.6  // the target: 2,100 bytes
        }
        var plan: PolicyPlan?
        let totals = try statements(f, { $0.hasSuffix(") AS INTEGER) FROM file") }) { plan = try f.store.enforce() }
        #expect(plan?.objects.map(\.ref.key) == ["k0", "k1"])
        #expect(plan?.commits.count == 1)
        #expect(totals == (shared ? 2 : 1))
    }

    @Test(
        "a quota counts its owner's bytes once a batch when no file is shared, twice when one is",
        arguments: [false, true])
    func quota(shared: Bool) throws {
        let f = try fixture(shared: shared) { $0.quotas = [.init(owner: "o", maxBytes: 2000)] }
        var plan: PolicyPlan?
        let usages = try statements(f, { $0.contains("o.owner = ") && $0.contains("TOTAL(f.size)") }) {
            plan = try f.store.enforce()
        }
        #expect(plan?.objects.map(\.ref.key) == ["k0", "k1"])
        #expect(usages == (shared ? 2 : 1))
    }
}
