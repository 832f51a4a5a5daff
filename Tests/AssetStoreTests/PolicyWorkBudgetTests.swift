// A policy batch's work budget (PolicyRun.swift): candidates looked at and what deletions'
// rules reach are charged to one transaction's budget, so that protected candidates or long
// cascades end the transaction, and the next one goes on from where it stopped.

import AssetStore
import AssetStoreTestSupport
import Foundation
import Synchronization
import Testing

private func lruPolicy(_ configure: (inout PolicyConfiguration) -> Void) -> PolicyConfiguration {
    var p = PolicyConfiguration()
    p.order = .lru
    configure(&p)
    return p
}

/// Counts the transactions of a run: progress is reported after each, committed or not.
private final class Batches: Sendable {
    private let n = Mutex(0)
    var count: Int { n.withLock { $0 } }
    var progress: @Sendable (PolicyProgress) -> Void { { _ in self.n.withLock { $0 += 1 } } }
}

@Suite("policy batch work budget")
struct PolicyWorkBudgetTests {
    /// How the protected-head layout is run against: the byte budget in an order, or a quota.
    enum Target: CustomStringConvertible, Sendable {
        case budget(EvictionOrder)
        case quota
        var description: String {
            switch self {
            case .budget(let o): "budget \(o)"
            case .quota: "quota"
            }
        }
    }

    @Test(
        "deny-protected objects ahead of deletable ones are looked at over several transactions",
        arguments: [Target.budget(.lru), .budget(.s3fifo), .budget(.sieve), .quota])
    func protectedHead(_ target: Target) throws {
        let protected = 300
        // batch 10: a budget of 100 a transaction.
        let f = try Fixture {
            $0.policy = lruPolicy {
                switch target {
                case .budget(let order):
                    $0.order = order
                    $0.maxBytes = Int64(protected) * 100; $0.lowWater = 1
                case .quota: $0.quotas = [.init(owner: "alice", maxBytes: Int64(protected) * 100)]
                }
                $0.batch = 10
            }
            $0.defaultOwner = "alice"
        }
        try f.store.write { tx in
            try tx.put(ref("keep", "x"), value: ["note": "holder"])
            try tx.pin(ref("keep", "x"))
            for i in 0..<protected {
                let k = ref("p", "p\(i)")
                try tx.put(k, value: ["file": .string(try f.makeFile("p\(i)", size: 100))])
                try tx.addEdge(
                    name: "uses\(i)", source: ref("keep", "x"), destination: .object(k), rules: .denyDeleteDestination)
            }
        }
        f.clock.advance(1)  // the deletable ones are more recently accessed: after every protected one
        try f.store.write { tx in
            for i in 0..<3 {
                try tx.put(ref("c", "k\(i)"), value: ["file": .string(try f.makeFile("k\(i)", size: 100))])
            }
        }
        f.clock.advance(3600)
        let batches = Batches()
        let plan = try f.store.enforce(progress: batches.progress)
        // 300 refusals (each one object and one edge undone) cannot fit one budget of 100.
        // Batches that delete nothing roll back instead of committing (S3-FIFO and SIEVE commit
        // what they placed): the progress reports, one a transaction, count them all.
        #expect(batches.count > 3, "\(batches.count) transactions")
        if case .budget(let order) = target, order != .lru { #expect(plan.commits.count > 3) }
        for i in 0..<protected { #expect(try f.exists(ref("p", "p\(i)"))) }
        guard case .budget(let order) = target, order != .lru else {
            #expect(plan.objects.map(\.ref.key) == ["k0", "k1", "k2"])
            #expect(plan.skipped[.deny] == protected)
            // A run that can free nothing ends too, in as many transactions.
            let again = Batches()
            #expect(try f.store.evict(bytes: 100, owner: nil, progress: again.progress).objects.isEmpty)
            #expect(again.count > 3)
            return
        }
        // The queues meet the deletable objects only once the protected ones are placed
        // and passed over, which ends their run (EvictionQueues.swift): the next one takes them.
        #expect(plan.objects.isEmpty && plan.skipped[.deny] == protected)
        let again = Batches()
        #expect(try Set(f.store.enforce(progress: again.progress).objects.map(\.ref.key)) == ["k0", "k1", "k2"])
    }

    @Test("a batch of expiries whose cascades are long is split over transactions")
    func cascadesSplit() throws {
        let f = try Fixture {
            $0.policy = lruPolicy {
                $0.ttls = [.init(collection: "album", maxAge: 60)]; $0.batch = 10
            }
        }
        // Ten albums, each with twenty photos that go with it: 210 objects and 200 edges.
        try f.store.write { tx in
            for a in 0..<10 {
                try tx.put(ref("album", "a\(a)"), value: ["n": .int(Int64(a))])
                for p in 0..<20 {
                    let photo = ref("photo", "a\(a)p\(p)")
                    try tx.put(photo, value: ["n": .int(Int64(p))])
                    try tx.addEdge(
                        name: "in", source: photo, destination: .object(ref("album", "a\(a)")),
                        rules: .deleteSourceIfDestinationDeleted)
                }
            }
        }
        f.clock.advance(3600)
        // A one-batch dry run (a non-admin's) plans the first album, not nothing.
        let first = try f.store.enforce(dryRun: true, dryRunBatches: 1)
        #expect(first.objects.count == 21 && first.truncated, "\(first.objects.count)")
        let dry = try f.store.enforce(dryRun: true)
        let plan = try f.store.enforce()
        #expect(dry.objects.map(\.ref) == plan.objects.map(\.ref))
        #expect(plan.objects.count == 210)
        #expect(plan.objects.filter { $0.reason == .age }.count == 10)
        // An album's cascade and the rows read for it (its photos' too, their ages interleave
        // with the albums', each charged) leave no room in a budget of 100 for a second: one
        // album a transaction, never three. Before the photos' rows were charged, two went
        // together.
        #expect(plan.commits.count > 1 && plan.commits.count <= 10, "\(plan.commits.map(\.deleted.count))")
        #expect(plan.commits.allSatisfy { $0.deleted.count <= 2 * 21 }, "\(plan.commits.map(\.deleted.count))")
        #expect(plan.oversized == 0)
        #expect(try f.store.read { try $0.objectCount() } == 0)
    }

    @Test("a cascade larger than the budget goes as the only deletion of its transaction")
    func oversizedCascadeAlone() throws {
        let f = try Fixture {
            $0.policy = lruPolicy {
                $0.ttls = [.init(collection: "album", maxAge: 60)]; $0.batch = 2
            }
        }
        // budget 20; album "big" reaches 100 photos, "small0" and "small1" none.
        try f.store.write { tx in
            try tx.put(ref("album", "small0"), value: ["n": 0])
            try tx.put(ref("album", "big"), value: ["n": 1])
            try tx.put(ref("album", "small1"), value: ["n": 2])
            for p in 0..<100 {
                let photo = ref("photo", "p\(p)")
                try tx.put(photo, value: ["n": .int(Int64(p))])
                try tx.addEdge(
                    name: "in", source: photo, destination: .object(ref("album", "big")),
                    rules: .deleteSourceIfDestinationDeleted)
            }
        }
        f.clock.advance(3600)
        let dry = try f.store.enforce(dryRun: true)
        let plan = try f.store.enforce()
        #expect(dry.objects == plan.objects)
        #expect(plan.objects.count == 103)
        #expect(plan.oversized == 1 && dry.oversized == 1)
        let big = try #require(plan.commits.first { $0.deleted.contains { $0.ref == ref("album", "big") } })
        #expect(big.deleted.count == 101, "the big cascade shared its transaction")
        #expect(plan.json["oversized"] == 1)
    }

    @Test(
        "a deletion that does not fit what is left of the budget begins the next transaction",
        arguments: [Target.budget(.lru), .quota])
    func deferredToNextBatch(_ target: Target) throws {
        // batch 2: a budget of 20. "s" costs 1 + 3; "b" 1 + 17 (its file and seven photos),
        // more than the 15 left after "s", less than a whole budget.
        let f = try Fixture {
            $0.policy = lruPolicy {
                switch target {
                case .budget(let order):
                    $0.order = order
                    $0.maxBytes = 150; $0.lowWater = 0.01
                case .quota: $0.quotas = [.init(owner: "alice", maxBytes: 1)]
                }
                $0.batch = 2
            }
            $0.defaultOwner = "alice"
        }
        try f.store.write { tx in
            try tx.put(ref("c", "s"), value: ["file": .string(try f.makeFile("s", size: 100))])
            try tx.put(ref("c", "b"), value: ["file": .string(try f.makeFile("b", size: 100))])
        }
        f.clock.advance(1)  // the photos hold no file and come after both
        try f.store.write { tx in
            for p in 0..<7 {
                let photo = ref("photo", "p\(p)")
                try tx.put(photo, value: ["n": .int(Int64(p))])
                try tx.addEdge(
                    name: "in", source: photo, destination: .object(ref("c", "b")),
                    rules: .deleteSourceIfDestinationDeleted)
            }
        }
        f.clock.advance(3600)
        let dry = try f.store.enforce(dryRun: true)
        let plan = try f.store.enforce()
        #expect(dry.objects == plan.objects)
        let photos = Set((0..<7).map { "p\($0)" })
        #expect(plan.objects.prefix(2).map(\.ref.key) == ["s", "b"])
        #expect(Set(plan.objects.dropFirst(2).map(\.ref.key)) == photos)
        #expect(plan.objects.dropFirst(2).allSatisfy { $0.reason == .cascade })
        let keys = plan.commits.map { $0.deleted.map(\.ref.key) }.filter { !$0.isEmpty }  // not the sweep
        #expect(keys.count == 2 && keys.first == ["s"], "\(keys)")
        #expect(keys.last?.first == "b" && Set(keys.last?.dropFirst() ?? []) == photos, "\(keys)")
        #expect(plan.oversized == 0)
    }

    /// Young and pinned objects are rows looked at like any other: a one-batch dry run (a
    /// non-admin's) that passes over nothing else stops at the batch's budget. SQLite passed
    /// over them inside one query, and then counted them all, holding the writer for 1-2 s
    /// over 180,000 young objects.
    @Test("a one-batch dry run over young and pinned objects stops at the budget")
    func heldObjectsCharged() throws {
        let f = try Fixture { $0.policy = lruPolicy { $0.batch = 5 } }  // a budget of 50
        try f.store.write { tx in
            for i in 0..<300 {
                try tx.put(ref("young", "k\(i)"), value: ["n": .int(Int64(i))])
                if i % 3 == 0 { try tx.pin(ref("young", "k\(i)")) }
            }
        }
        let one = try f.store.evict(bytes: 1 << 40, owner: nil, dryRun: true, dryRunBatches: 1)
        let looked = one.skipped.values.reduce(0, +)
        #expect(one.truncated && one.objects.isEmpty)
        #expect(looked > 0 && looked <= 50, "\(one.skipped)")
        // Unbounded, the run looks at every one of them, and counts each once.
        let all = try f.store.evict(bytes: 1 << 40, owner: nil, dryRun: true)
        #expect(!all.truncated && all.objects.isEmpty)
        #expect(all.skipped == [.tooYoung: 200, .pinned: 100], "\(all.skipped)")
    }

    /// An expiry looks at young and pinned objects like any other (TTLs by idle time and by
    /// age both): a one-batch dry run over nothing else stops at the budget. SQLite passed over
    /// them inside one query, unbounded: a one-batch dry run read every one.
    @Test("a one-batch dry expiry over young and pinned objects stops at the budget", arguments: ["idle", "age"])
    func heldObjectsChargedInExpiry(_ by: String) throws {
        let f = try Fixture { $0.policy = lruPolicy { $0.batch = 5 } }  // a budget of 50; min_age 10 min
        try f.store.write { tx in
            for i in 0..<300 {
                try tx.put(ref("young", "k\(i)"), value: ["n": .int(Int64(i))])
                if i % 3 == 0 { try tx.pin(ref("young", "k\(i)")) }
            }
        }
        f.clock.advance(2)  // past a TTL of one second, still too young
        let expire = { (batches: Int?) in
            try f.store.expire(
                collection: nil, olderThan: by == "age" ? 1 : nil, idle: by == "idle" ? 1 : nil, dryRun: true,
                dryRunBatches: batches)
        }
        let one = try expire(1)
        let looked = one.skipped.values.reduce(0, +)
        #expect(one.truncated && one.objects.isEmpty)
        #expect(looked > 0 && looked <= 50, "\(one.skipped)")
        let all = try expire(nil)
        #expect(!all.truncated && all.objects.isEmpty)
        #expect(all.skipped == [.tooYoung: 200, .pinned: 100], "\(all.skipped)")
    }

    /// An expiry of one collection walks the idle order of all, and charges the other
    /// collections' objects it passes over: a real run goes over several transactions, a
    /// one-batch dry run stops at the budget. SQLite passed over them inside one query.
    @Test("an expiry of one collection charges the other collections' objects it passes over")
    func otherCollectionsCharged() throws {
        let f = try Fixture {
            $0.policy = lruPolicy {
                $0.batch = 5; $0.minAge = 0
            }
        }  // a budget of 50
        try f.store.write { tx in
            for i in 0..<300 { try tx.put(ref("other", "k\(i)"), value: ["n": .int(Int64(i))]) }
        }
        f.clock.advance(1)
        try f.put([(ref("mine", "m"), ["n": 1])])
        f.clock.advance(10)
        let one = try f.store.expire(collection: "mine", olderThan: nil, idle: 5, dryRun: true, dryRunBatches: 1)
        #expect(one.truncated && one.objects.isEmpty && one.skipped.isEmpty, "\(one.skipped)")
        let batches = Batches()
        let plan = try f.store.expire(collection: "mine", olderThan: nil, idle: 5, progress: batches.progress)
        #expect(plan.objects.map(\.ref.key) == ["m"] && plan.skipped.isEmpty)
        #expect(batches.count >= 6, "\(batches.count) transactions")  // 301 rows, 50 a transaction
    }

    /// A quota looks at its owner's young and pinned objects like any other: a one-batch dry
    /// run over nothing else stops at the budget.
    @Test("a one-batch dry quota run over young and pinned objects stops at the budget")
    func heldObjectsChargedInQuota() throws {
        let f = try Fixture {
            $0.policy = lruPolicy {
                $0.batch = 5; $0.quotas = [.init(owner: "alice", maxBytes: 1)]
            }
            $0.defaultOwner = "alice"
        }
        let paths = try (0..<300).map { try f.makeFile("q\($0)") }
        try f.store.write { tx in
            for (i, path) in paths.enumerated() {
                try tx.put(ref("young", "k\(i)"), value: ["file": .string(path)])
                if i % 3 == 0 { try tx.pin(ref("young", "k\(i)")) }
            }
        }
        let one = try f.store.enforce(dryRun: true, dryRunBatches: 1)
        let looked = one.skipped.values.reduce(0, +)
        #expect(one.truncated && one.objects.isEmpty)
        #expect(looked > 0 && looked <= 50, "\(one.skipped)")
        let all = try f.store.enforce(dryRun: true)
        #expect(!all.truncated && all.objects.isEmpty)
        #expect(all.skipped == [.tooYoung: 200, .pinned: 100], "\(all.skipped)")
    }

    /// S3-FIFO and SIEVE spare objects accessed since they last passed, moving each on: with
    /// every object read, the next to evict is a whole pass away (three in S3-FIFO). Those
    /// moves are charged: a one-batch dry run stops at the budget, a real run goes on over
    /// several transactions from where each stopped. They were free, and one batch made them all.
    @Test(
        "the objects an order spares on the way are charged to the batch", arguments: [EvictionOrder.sieve, .s3fifo])
    func sparedObjectsCharged(_ order: EvictionOrder) throws {
        let n = 300
        let f = try Fixture {
            $0.policy = lruPolicy {
                $0.order = order
                $0.maxBytes = Int64(n) * 100; $0.lowWater = 1
                $0.minAge = 0
                $0.batch = 5  // a budget of 50
            }
        }
        let paths = try (0...n).map { try f.makeFile("s\($0)", size: 100) }
        try f.store.write { tx in
            for i in 0...n { try tx.put(ref("c", "k\(i)"), value: ["file": .string(paths[i])]) }
        }
        f.clock.advance(1)
        // One over the budget: placing them all makes room for the last, and k0 goes.
        #expect(try f.store.enforce().objects.count == 1)
        for _ in 0..<2 {
            for i in 1...n { try f.store.touch(ref("c", "k\(i)")) }
        }
        try f.store.flushAccesses()
        f.clock.advance(1)
        try f.put([(ref("c", "new"), ["file": .string(try f.makeFile("new", size: 100))])])
        let one = try f.store.enforce(dryRun: true, dryRunBatches: 1)
        #expect(one.truncated && one.objects.isEmpty, "\(one.objects.map(\.ref.key))")
        let batches = Batches()
        let plan = try f.store.enforce(progress: batches.progress)
        #expect(plan.objects.count == 1, "\(plan.objects.map(\.ref.key))")
        #expect(batches.count > 3, "\(batches.count) transactions")
    }

    /// Reads between a run's batches raise the access counts of objects it already spared:
    /// each is spared at most once a run (SIEVE), or three times (S3-FIFO), so the run still
    /// finds its victim. Spared again at each batch, a store read faster than a pass takes
    /// kept a run committing batches that freed nothing (here, until the reads stop).
    @Test(
        "reads between batches cannot keep a run from evicting", arguments: [EvictionOrder.sieve, .s3fifo])
    func readsBetweenBatches(_ order: EvictionOrder) throws {
        let n = 300
        let f = try Fixture {
            $0.policy = lruPolicy {
                $0.order = order
                $0.maxBytes = Int64(n) * 100; $0.lowWater = 1
                $0.minAge = 0
                $0.batch = 5  // a budget of 50
            }
        }
        let paths = try (0...n).map { try f.makeFile("s\($0)", size: 100) }
        try f.store.write { tx in
            for i in 0...n { try tx.put(ref("c", "k\(i)"), value: ["file": .string(paths[i])]) }
        }
        f.clock.advance(1)
        #expect(try f.store.enforce().objects.count == 1)  // k0: every object now placed
        let store: Store = f.store
        let readAll = { @Sendable in for i in 1...n { try? store.touch(ref("c", "k\(i)")) } }
        readAll()
        readAll()
        try f.store.flushAccesses()
        f.clock.advance(1)
        try f.put([(ref("c", "new"), ["file": .string(try f.makeFile("new", size: 100))])])
        // Every object read again after each batch, for the first 200 batches.
        let batches = Batches()
        let plan = try f.store.enforce(progress: { p in
            batches.progress(p)
            if batches.count < 200 { readAll() }
        })
        #expect(plan.objects.count == 1, "\(plan.objects.map(\.ref.key))")
        // At most three passes of 300 spared objects, 50 a batch: 18 batches, and a few more.
        #expect(batches.count < 30, "\(batches.count) transactions")
    }

    /// S3-FIFO chooses the queue of an eviction once, as libCacheSim does. The promotions of
    /// an eviction in the small queue grow the main one past its share: a budget that paused
    /// it midway must not let the next batch choose again, or the victim depends on `batch`.
    @Test("an S3-FIFO eviction paused at the budget goes on in the queue it chose")
    func pausedEvictionKeepsItsQueue() throws {
        let n = 1000  // the small queue holds 50 of them
        let f = try Fixture {
            $0.policy = lruPolicy {
                $0.order = .s3fifo
                $0.maxBytes = Int64(n) * 100; $0.lowWater = 1
                $0.minAge = 0
                $0.batch = 1  // a budget of 10: the 49 promotions below take five batches
            }
        }
        let paths = try (0...n).map { try f.makeFile("s\($0)", size: 100) }
        try f.store.write { tx in
            for i in 0...n { try tx.put(ref("c", "k\(i)"), value: ["file": .string(paths[i])]) }
        }
        f.clock.advance(1)
        // k0-k49 fill the small queue, the rest go to the main one; making room for k1000, k0
        // goes from the small queue, and k1000 takes its place.
        #expect(try f.store.enforce().objects.map(\.ref.key) == ["k0"])
        for _ in 0..<2 {
            for i in 1..<50 { try f.store.touch(ref("c", "k\(i)")) }
        }
        try f.store.flushAccesses()
        f.clock.advance(1)
        try f.put([(ref("c", "new"), ["file": .string(try f.makeFile("new", size: 100))])])
        // The small queue's read objects go to the main one, and its first unread one, k1000,
        // is the victim; choosing again after a pause took the main queue's oldest, k50.
        let plan = try f.store.enforce()
        #expect(plan.objects.map(\.ref.key) == ["k1000"], "\(plan.objects.map(\.ref.key))")
    }
}
