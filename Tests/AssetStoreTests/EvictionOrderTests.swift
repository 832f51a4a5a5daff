// The eviction orders of assetd.toml(5) `order` against a real store and real files: S3-FIFO's
// ghost hit goes to the main queue, SIEVE spares a visited object for one pass of its hand,
// the state survives a restart, a dry run plans what the real run does, and every order keeps
// the protections (min_age, pins) and says what it passed over.

import AssetStoreTestSupport
import Foundation
import GRDB
import Testing

@testable import AssetStore

/// A store with a byte budget of `budget`, low water 100%, no grace age, and `order`.
private func store(_ order: EvictionOrder, budget: Int64) throws -> Fixture {
    try Fixture {
        var p = PolicyConfiguration()
        p.maxBytes = budget
        p.lowWater = 1
        p.minAge = 0
        p.order = order
        $0.policy = p
    }
}

/// Puts `c/key` holding a new file of `size` bytes, one second after the last.
private func add(_ f: Fixture, _ key: String, size: Int = 100) throws {
    f.clock.advance(1)
    let path = try f.makeFile(key + "-\(Int(f.clock.now))", size: size)
    try f.put([(ref("c", key), ["file": .string(path)])])
}

/// A touch, flushed at once.
private func touch(_ f: Fixture, _ key: String) throws {
    f.clock.advance(1)
    try f.store.touch(ref("c", key))
    try f.store.flushAccesses()
}

/// The queue `c/key` is in (0 small, 1 main, -1 not yet placed), if any.
func queue(_ f: Fixture, _ key: String, collection: String = "c") throws -> Int? {
    try f.store.read { r in
        try Int.fetchOne(
            r.db,
            sql: "SELECT q.queue FROM evict_queue q JOIN object d ON d.id = q.id WHERE d.collection = ? AND d.key = ?",
            arguments: [collection, key])
    }
}

private func keys(_ plan: PolicyPlan) -> [String] { plan.objects.map(\.ref.key) }

@Suite("Eviction orders")
struct EvictionOrderTests {
    @Test("S3-FIFO: a key evicted from the small queue and put again goes to the main queue")
    func ghostHitGoesToMain() throws {
        // Budget 4,000 bytes: the small queue holds 200 (two objects), the main one 3,800.
        let f = try store(.s3fifo, budget: 4000)
        for i in 0..<40 { try add(f, "k\(i)") }
        #expect(try f.store.enforce().objects.isEmpty)  // at the budget, not over it
        try add(f, "k40")
        // Before the first eviction a full small queue admits to the main one: k0 and k1 are
        // the small queue, k0 is its oldest and never accessed again.
        var plan = try f.store.enforce()
        #expect(keys(plan) == ["k0"])
        #expect(plan.objects.first?.detail == "s3fifo: not accessed again in the small queue")
        try add(f, "k0")  // a miss on a key the ghost record remembers
        plan = try f.store.enforce()
        #expect(keys(plan) == ["k1"])
        #expect(try queue(f, "k0") == EvictionQueues.main)
        #expect(try queue(f, "k40") == EvictionQueues.small)
    }

    @Test("S3-FIFO: the ghost record keeps at most half the budget's bytes, the newest keys")
    func ghostRecordIsBounded() throws {
        // Budget 4,000 bytes: the ghost record holds at most 2,000, twenty keys of 100. The
        // run evicts k0, k1, then k40 to k77 in turn.
        let f = try store(.s3fifo, budget: 4000)
        for i in 0..<80 {
            try add(f, "k\(i)")
            _ = try f.store.enforce()
        }
        let (count, bytes) = try f.store.read { r in
            let row = try Row.fetchOne(r.db, sql: "SELECT COUNT(*), COALESCE(SUM(size), 0) FROM evict_ghost")!
            return (row[0] as Int, row[1] as Int64)
        }
        #expect(count == 20 && bytes == 2000)
        try add(f, "k0")  // evicted first, its key since dropped from the record
        _ = try f.store.enforce()
        #expect(try queue(f, "k0") == EvictionQueues.small)
        try add(f, "k77")  // evicted last
        _ = try f.store.enforce()
        #expect(try queue(f, "k77") == EvictionQueues.main)
    }

    @Test("S3-FIFO: an object accessed twice in the small queue is promoted, not evicted")
    func smallQueuePromotes() throws {
        let f = try store(.s3fifo, budget: 4000)
        for i in 0..<40 { try add(f, "k\(i)") }
        try touch(f, "k0")
        try touch(f, "k0")
        try add(f, "k40")
        let plan = try f.store.enforce()
        #expect(keys(plan) == ["k1"])
        #expect(try queue(f, "k0") == EvictionQueues.main)
    }

    @Test("S3-FIFO: two touches before one flush count as two accesses, as two flushed ones do")
    func touchesWithinOneFlushWindowEachCount() throws {
        let f = try store(.s3fifo, budget: 4000)
        for i in 0..<40 { try add(f, "k\(i)") }
        f.clock.advance(1)
        try f.store.touch(ref("c", "k0"))
        f.clock.advance(1)
        try f.store.touch(ref("c", "k0"))
        try add(f, "k40")
        let plan = try f.store.enforce()  // flushes the two touches first
        #expect(keys(plan) == ["k1"])
        #expect(try queue(f, "k0") == EvictionQueues.main)
    }

    @Test("SIEVE: an object accessed since the hand passed survives one pass, and no more")
    func visitedSurvivesOnePass() throws {
        let f = try store(.sieve, budget: 1000)
        for i in 0..<10 { try add(f, "k\(i)") }
        try touch(f, "k0")
        try add(f, "k10")
        var plan = try f.store.enforce()
        #expect(keys(plan) == ["k1"])  // the hand spared k0 and cleared its bit
        #expect(plan.objects.first?.detail == "sieve: not accessed since the hand last passed")
        #expect(try f.exists(ref("c", "k0")))
        // The hand goes on toward the newest, evicting in turn those not accessed; k0, behind
        // it, stays until the hand comes round again.
        var gone = [String]()
        for i in 11..<21 {
            try add(f, "k\(i)")
            plan = try f.store.enforce()
            gone += keys(plan)
        }
        #expect(gone == (2..<12).map { "k\($0)" })
        #expect(try f.exists(ref("c", "k0")))
        // With everything ahead of the hand accessed, it passes them all and takes k0.
        for i in 12..<21 { try touch(f, "k\(i)") }
        try add(f, "k21")
        #expect(try keys(f.store.enforce()) == ["k0"])
    }

    @Test("SIEVE: after evicting the newest the hand starts from the oldest, not at a newer put")
    func handWrapsAfterTheNewest() throws {
        let f = try store(.sieve, budget: 1000)
        for i in 0..<10 { try add(f, "k\(i)") }
        for i in 0..<9 { try touch(f, "k\(i)") }
        try add(f, "k10")
        // The hand passes k0–k8, clearing their bits, and takes k9, the newest placed.
        #expect(try keys(f.store.enforce()) == ["k9"])
        try add(f, "k11")
        // k10 was placed after k9 went; the hand is past the end, so it starts at the oldest.
        #expect(try keys(f.store.enforce(dryRun: true)) == ["k0"])
        #expect(try keys(f.store.enforce()) == ["k0"])
        try add(f, "k12")
        #expect(try keys(f.store.enforce()) == ["k1"])
    }

    @Test("changing the order and back starts its state afresh, in one process and across opens")
    func orderChangeAndBackStartsAfresh() throws {
        let f = try store(.sieve, budget: 1000)
        for i in 0..<10 { try add(f, "k\(i)") }
        try touch(f, "k0")
        try add(f, "k10")
        #expect(try keys(f.store.enforce()) == ["k1"])  // the hand spared k0; it is at k2 now
        var p = f.store.policy!
        p.order = .lru
        f.store.policy = p
        p.order = .sieve
        f.store.policy = p
        try add(f, "k11")
        // Afresh, every object is placed again in id order and the hand starts at the oldest,
        // k0, whose visited bit its pass cleared. The dry run plans the same.
        #expect(try keys(f.store.enforce(dryRun: true)) == ["k0"])
        #expect(try keys(f.store.enforce()) == ["k0"])
        try add(f, "k12")
        #expect(try keys(f.store.enforce()) == ["k2"])  // and then goes on as usual

        try touch(f, "k3")
        try add(f, "k13")
        #expect(try keys(f.store.enforce()) == ["k4"])  // the hand spared k3; it is at k5 now

        // The same across opens: one under LRU (with no policy run), then one under SIEVE.
        f.configuration.policy?.order = .lru
        try f.reopen()
        f.configuration.policy?.order = .sieve
        try f.reopen()
        try add(f, "k14")
        #expect(try keys(f.store.enforce()) == ["k3"])  // from the oldest again, not from k5
    }

    @Test("the order's state survives a restart: the hand, the visited bits, the ghost record")
    func restartKeepsState() throws {
        let f = try store(.sieve, budget: 1000)
        for i in 0..<10 { try add(f, "k\(i)") }
        try touch(f, "k0")
        try add(f, "k10")
        #expect(try keys(f.store.enforce()) == ["k1"])
        try touch(f, "k3")
        try f.store.flushAccesses()
        try f.reopen()
        try add(f, "k11")
        #expect(try keys(f.store.enforce()) == ["k2"])  // the hand did not restart at the tail (k0)
        try add(f, "k12")
        #expect(try keys(f.store.enforce()) == ["k4"])  // k3's access was counted before the restart

        let g = try store(.s3fifo, budget: 4000)
        for i in 0..<41 { try add(g, "k\(i)") }
        #expect(try keys(g.store.enforce()) == ["k0"])
        try g.reopen()
        try add(g, "k0")
        _ = try g.store.enforce()
        #expect(try queue(g, "k0") == EvictionQueues.main)
    }

    @Test("a dry run plans exactly what the real run then does, in every order")
    func dryRunEqualsRealRun() throws {
        for order in EvictionOrder.allCases {
            let f = try Fixture {
                var p = PolicyConfiguration()
                p.maxBytes = 3000
                p.lowWater = 0.5
                p.minAge = 5
                p.batch = 3  // several commits
                p.order = order
                $0.policy = p
            }
            for i in 0..<40 {
                try add(f, "k\(i)", size: 100 + (i * 37) % 200)
                if i == 2 { try f.store.write { tx in try tx.pin(ref("c", "k2")) } }
                if i % 5 == 0 && i > 0 { try? touch(f, "k\(i * 3 / 4)") }  // gone or not: a miss is no touch
                if i % 10 == 9 && i < 30 { _ = try f.store.enforce() }
            }
            try touch(f, "k33")
            try touch(f, "k33")
            let dry = try f.store.enforce(dryRun: true)
            let real = try f.store.enforce()
            #expect(!dry.objects.isEmpty, "\(order)")
            #expect(dry.objects == real.objects, "\(order)")
            #expect(dry.files == real.files && dry.bytes == real.bytes, "\(order)")
            #expect(dry.skipped == real.skipped, "\(order)")
            #expect(real.commits.count > 1, "\(order)")
            #expect(try f.exists(ref("c", "k2")), "\(order)")
        }
    }

    @Test("a store whose oldest objects are all protected still gets back under its budget")
    func protectedOldestDoNotStopTheBudget() throws {
        // More pinned objects than one batch places, then big ones: before, each run placed
        // the same pinned chunk, deleted nothing, rolled back, and the budget was never met.
        for order in [EvictionOrder.s3fifo, .sieve] {
            let f = try Fixture {
                var p = PolicyConfiguration()
                p.maxBytes = 8000
                p.lowWater = 1
                p.minAge = 0
                p.batch = 1
                p.order = order
                $0.policy = p
            }
            for i in 0..<300 {
                try add(f, "p\(i)", size: 10)
                try f.store.write { tx in try tx.pin(ref("c", "p\(i)")) }
            }
            for i in 0..<10 { try add(f, "big\(i)", size: 1000) }
            let dry = try f.store.enforce(dryRun: true)
            var deleted: [String] = []
            for _ in 0..<3 { deleted += keys(try f.store.enforce()) }
            #expect(!deleted.isEmpty && deleted.allSatisfy { $0.hasPrefix("big") }, "\(order): \(deleted)")
            #expect(keys(dry) == Array(deleted.prefix(dry.objects.count)), "\(order)")
            let left = try f.store.read { r in try Int64.fetchOne(r.db, sql: "SELECT sum(size) FROM object") } ?? 0
            #expect(left <= 8000, "\(order): \(left) bytes left")
        }
    }

    @Test("young and pinned objects are never taken, and the plan counts them as skipped")
    func protectedAreSkipped() throws {
        for order in EvictionOrder.allCases {
            let f = try Fixture {
                var p = PolicyConfiguration()
                p.maxBytes = 100_000
                p.order = order
                $0.policy = p  // min_age: the default 10 minutes
            }
            for i in 0..<5 { try add(f, "k\(i)") }
            try f.store.write { tx in try tx.pin(ref("c", "k0")) }
            let plan = try f.store.evict(bytes: 300, owner: nil, dryRun: true)
            #expect(plan.objects.isEmpty, "\(order)")
            #expect(plan.skipped == [.pinned: 1, .tooYoung: 4], "\(order)")
            let json = plan.json
            #expect(json["skipped"]?["too_young"] == .int(4), "\(order)")
            let real = try f.store.evict(bytes: 300, owner: nil)
            #expect(real.objects.isEmpty && real.skipped == plan.skipped, "\(order)")
        }
    }

    @Test("policy.evict of some bytes takes them from the owner furthest over quota first")
    func explicitEvictHonoursQuotas() throws {
        let f = try Fixture {
            var p = PolicyConfiguration()
            p.minAge = 0
            p.quotas = [.init(owner: "alice", maxBytes: 1000), .init(owner: "bob", maxBytes: 1000)]
            $0.policy = p
        }
        // alice at 1.5x her quota with the oldest objects, bob at 2.5x.
        for i in 0..<3 {
            f.clock.advance(1)
            try f.put([(ref("c", "a\(i)"), ["file": .string(try f.makeFile("a\(i)", size: 500))])], owner: "alice")
        }
        for i in 0..<5 {
            f.clock.advance(1)
            try f.put([(ref("c", "b\(i)"), ["file": .string(try f.makeFile("b\(i)", size: 500))])], owner: "bob")
        }
        let dry = try f.store.evict(bytes: 1000, owner: nil, dryRun: true)
        #expect(keys(dry) == ["b0", "b1"])
        #expect(dry.objects.allSatisfy { $0.reason == .evict && $0.detail?.hasPrefix("quota: bob") == true })
        let real = try f.store.evict(bytes: 1000, owner: nil)
        #expect(keys(real) == keys(dry))
    }

    @Test("touches count only where an order needs them: LRU writes no queue rows")
    func lruWritesNoState() throws {
        let f = try store(.lru, budget: 1000)
        for i in 0..<11 { try add(f, "k\(i)") }
        try touch(f, "k0")
        #expect(try keys(f.store.enforce()) == ["k1"])
        #expect(try f.store.read { r in try Int.fetchOne(r.db, sql: "SELECT COUNT(*) FROM evict_queue") } == 0)
    }
}
