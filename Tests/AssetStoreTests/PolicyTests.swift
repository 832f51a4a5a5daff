// Lifecycle policies (assetd(8), DATA MODEL, Lifecycle policies) against a real store and real
// files, with a test clock: the budget with low water, quota ordering, TTLs, min_age, pins, leases,
// deny edges, shared files counted once, batching, and a dry run's plan equal to the real run.

import AssetStore
import AssetStoreTestSupport
import Foundation
import GRDB
import Synchronization
import Testing

/// A fixture with `n` objects in collection `c`, each holding its own file of `size` bytes,
/// accessed one after another so k0 is the least recently used.
private func cache(
    _ n: Int, size: Int = 100, owner: (Int) -> String = { _ in "alice" }, policy: PolicyConfiguration? = nil
) throws -> Fixture {
    let f = try Fixture { $0.policy = policy }
    for i in 0..<n {
        let path = try f.makeFile("f\(i)", size: size)
        try f.put([(ref("c", "k\(i)"), ["file": .string(path)])], owner: owner(i))
        f.clock.advance(1)
    }
    f.clock.advance(3600)  // past min_age
    return f
}

private func keys(_ plan: PolicyPlan) -> [String] { plan.objects.map(\.ref.key) }

private func policy(_ configure: (inout PolicyConfiguration) -> Void) -> PolicyConfiguration {
    var p = PolicyConfiguration()
    p.order = .lru  // these tests pin down least-recently-accessed order (EvictionOrderTests: the others)
    configure(&p)
    return p
}

@Suite("Lifecycle policies")
struct PolicyTests {
    @Test("without a [policy] nothing is evicted, however full the store")
    func noPolicyNoEviction() throws {
        let f = try cache(5)
        let plan = try f.store.enforce()
        #expect(plan.objects.isEmpty && plan.commits.isEmpty)
        #expect(try f.store.read { try $0.objectCount() } == 5)
    }

    @Test("over budget, least recently accessed objects go until the low-water mark")
    func budgetLowWater() throws {
        let f = try cache(
            10,
            policy: policy {
                $0.maxBytes = 500; $0.lowWater = 0.8
            })
        try f.store.write { tx in try tx.touch(ref("c", "k0")) }  // k0 is now the most recent
        let plan = try f.store.enforce()
        #expect(keys(plan) == ["k1", "k2", "k3", "k4", "k5", "k6"])
        #expect(plan.objects.allSatisfy { $0.reason == .budget && $0.bytes == 100 })
        #expect(plan.bytes == 600 && plan.files.count == 6)
        _ = try f.store.sweep()
        for i in 1...6 { #expect(!f.exists(f.root + "/f\(i)")) }
        #expect(f.exists(f.root + "/f0") && f.exists(f.root + "/f7"))
        #expect(try f.store.enforce().objects.isEmpty)  // 400 bytes: within budget now
        let counters = try f.store.statistics().counters
        #expect(counters["policy_deleted"] == 6 && counters["policy_deleted_budget"] == 6)
        #expect(counters["policy_bytes"] == 600)
        _ = try f.store.enforce(dryRun: true)
        #expect(try f.store.statistics().counters["policy_deleted"] == 6)
    }

    @Test("a budget as large as a size can be, with low water at 100%, is simply never exceeded")
    func hugeBudget() throws {
        // Double(Int64.max) * 1.0 rounds up to 2^63, which no Int64 holds: the run trapped.
        let f = try cache(
            3,
            policy: policy {
                $0.maxBytes = .max; $0.lowWater = 1
            })
        #expect(try f.store.enforce().objects.isEmpty)
        #expect(try f.store.enforce(dryRun: true).objects.isEmpty)
    }

    @Test("an object that holds no file is never evicted for bytes, however old")
    func fileLessObjectsKept() throws {
        let f = try Fixture { $0.policy = policy { $0.maxBytes = 10 } }
        try f.put([(ref("settings", "s"), ["theme": "dark"])])
        f.clock.advance(1)
        try f.put([(ref("c", "k"), ["file": .string(try f.makeFile("f", size: 100))])])
        f.clock.advance(3600)
        #expect(keys(try f.store.enforce()) == ["k"])
        #expect(try f.exists(ref("settings", "s")))
    }

    @Test("within budget nothing goes, even above the low-water mark")
    func budgetHysteresis() throws {
        let f = try cache(
            10,
            policy: policy {
                $0.maxBytes = 1000; $0.lowWater = 0.5
            })
        #expect(try f.store.enforce().objects.isEmpty)
    }

    @Test("a file shared with a survivor frees nothing and is not counted")
    func sharedFileCountsOnlyWhenFreed() throws {
        let f = try cache(
            0,
            policy: policy {
                $0.maxBytes = 250; $0.lowWater = 1
            })
        let shared = try f.makeFile("shared", size: 100)
        let own = try f.makeFile("own", size: 100)
        let other = try f.makeFile("other", size: 100)
        try f.put([(ref("c", "a"), ["file": .string(shared)])])
        f.clock.advance(1)
        try f.put([(ref("c", "b"), ["file": .array([.string(shared), .string(own)])])])
        f.clock.advance(1)
        try f.put([(ref("c", "hot"), ["file": .string(other)])])
        f.clock.advance(3600)
        try f.store.write { tx in try tx.touch(ref("c", "hot")) }
        // Registered: shared, own, other = 300 > 250. Evicting a frees nothing (b holds
        // shared); evicting b frees shared and own.
        let plan = try f.store.enforce()
        #expect(keys(plan) == ["a", "b"])
        #expect(plan.objects.map(\.bytes) == [0, 200])
        #expect(plan.bytes == 200 && Set(plan.files) == [shared, own])
    }

    @Test("objects younger than min_age are never evicted")
    func minAgeProtects() throws {
        let f = try Fixture {
            $0.policy = policy {
                $0.maxBytes = 10; $0.minAge = 600
            }
        }
        for i in 0..<3 {
            try f.put([(ref("c", "k\(i)"), ["file": .string(try f.makeFile("f\(i)"))])])
        }
        f.clock.advance(599)
        #expect(try f.store.enforce().objects.isEmpty)
        f.clock.advance(2)
        #expect(try f.store.enforce().objects.count == 3)
    }

    @Test("pinned objects are never evicted; unpinned they are")
    func pinProtects() throws {
        let f = try cache(3, policy: policy { $0.maxBytes = 10 })
        try f.store.write { tx in try tx.pin(ref("c", "k0")) }
        #expect(keys(try f.store.enforce(dryRun: true)) == ["k1", "k2"])
        try f.store.write { tx in try tx.pin(ref("c", "k0"), false) }
        #expect(keys(try f.store.enforce(dryRun: true)) == ["k0", "k1", "k2"])
    }

    @Test("a leased object, and the holders of a leased file, are never evicted")
    func leasesProtect() throws {
        let f = try cache(3, policy: policy { $0.maxBytes = 10 })
        let lease = try f.store.leases.acquire(objects: [ref("c", "k0")], files: [f.root + "/f1"], ttl: 60)
        #expect(keys(try f.store.enforce(dryRun: true)) == ["k2"])
        f.clock.advance(61)  // the lease lapses
        #expect(keys(try f.store.enforce(dryRun: true)) == ["k0", "k1", "k2"])
        _ = lease
    }

    @Test("an eviction that would cascade into a pinned object does not happen")
    func cascadeIntoProtectedRefused() throws {
        let f = try cache(2, policy: policy { $0.maxBytes = 10 })
        try f.store.write { tx in
            try tx.addEdge(
                name: "child", source: ref("c", "k1"), destination: .object(ref("c", "k0")),
                rules: .deleteSourceIfDestinationDeleted)
            try tx.pin(ref("c", "k1"))
        }
        // Evicting k0 would delete k1 (pinned) by its rule: k0 stays too.
        #expect(try f.store.enforce().objects.isEmpty)
    }

    @Test("a deny edge keeps its protected end from eviction")
    func denyProtects() throws {
        let f = try cache(2, policy: policy { $0.maxBytes = 10 })
        f.clock.advance(1)
        try f.store.write { tx in
            try tx.put(ref("keep", "x"), value: ["note": "holder"])
            try tx.addEdge(
                name: "uses", source: ref("keep", "x"), destination: .object(ref("c", "k0")),
                rules: .denyDeleteDestination)
            try tx.pin(ref("keep", "x"))  // else x itself is evictable, and then k0
        }
        f.clock.advance(3600)
        let plan = try f.store.enforce()
        #expect(keys(plan) == ["k1"])
        #expect(try f.exists(ref("c", "k0")))
    }

    @Test("a cascade is reported with its own reason and the bytes it frees")
    func cascadeReported() throws {
        let f = try cache(0, policy: policy { $0.maxBytes = 10 })
        let p = try f.makeFile("child", size: 70)
        try f.put([(ref("album", "a"), ["note": "parent"])])
        try f.put([(ref("photo", "p"), ["file": .string(p)])])
        try f.store.write { tx in
            try tx.addEdge(
                name: "in", source: ref("photo", "p"), destination: .object(ref("album", "a")),
                rules: .deleteSourceIfDestinationDeleted)
            try tx.touch(ref("photo", "p"))
        }
        f.clock.advance(3600)
        let plan = try f.store.enforce()
        #expect(
            plan.objects == [
                PlannedDeletion(
                    ref: ref("album", "a"), reason: .budget, bytes: 0, detail: "lru: least recently accessed"),
                PlannedDeletion(ref: ref("photo", "p"), reason: .cascade, bytes: 70),
            ])
    }

    @Test("quotas evict the owner furthest over first, recomputing the ratio after each eviction")
    func quotaOrdering() throws {
        // alice holds 6 x 100 (quota 200: ratio 3), bob 4 x 100 (quota 200: ratio 2).
        let f = try cache(
            10, owner: { $0 < 6 ? "alice" : "bob" },
            policy: policy {
                $0.quotas = [.init(owner: "alice", maxBytes: 200), .init(owner: "bob", maxBytes: 200)]
            })
        let plan = try f.store.enforce()
        let owners = plan.objects.map { Int($0.ref.key.dropFirst())! < 6 ? "a" : "b" }
        // a: 600→500 (2.5), 500→400 (2.0, ties with b; "alice" first by name), 400→300 (1.5),
        // then b 400→300 (1.5, tie: alice first) a 300→200, b 300→200.
        #expect(owners == ["a", "a", "a", "b", "a", "b"])
        #expect(keys(plan) == ["k0", "k1", "k2", "k6", "k3", "k7"])
        #expect(plan.objects.allSatisfy { $0.reason == .quota })
    }

    @Test("an owner's quota counts a file it holds twice once")
    func quotaCountsFileOnce() throws {
        let f = try cache(0, policy: policy { $0.quotas = [.init(owner: "alice", maxBytes: 150)] })
        let shared = try f.makeFile("s", size: 100)
        try f.put(
            [(ref("c", "a"), ["file": .string(shared)]), (ref("c", "b"), ["file": .string(shared)])], owner: "alice")
        f.clock.advance(3600)
        #expect(try f.store.enforce().objects.isEmpty)  // 100 ≤ 150
    }

    @Test("a TTL expires idle objects and aged objects of its collection only")
    func ttl() throws {
        let f = try Fixture {
            $0.policy = policy { $0.ttls = [.init(collection: "thumbs", maxIdle: 3600, maxAge: 86_400)] }
        }
        try f.put([(ref("thumbs", "old"), ["n": 1]), (ref("thumbs", "busy"), ["n": 2]), (ref("other", "x"), ["n": 3])])
        f.clock.advance(3000)
        try f.store.write { tx in try tx.touch(ref("thumbs", "busy")) }
        f.clock.advance(1000)  // old idle 4000 s, busy idle 1000 s
        #expect(try f.store.enforce().objects == [PlannedDeletion(ref: ref("thumbs", "old"), reason: .idle, bytes: 0)])
        f.clock.advance(86_400)
        let plan = try f.store.enforce()
        #expect(plan.objects == [PlannedDeletion(ref: ref("thumbs", "busy"), reason: .idle, bytes: 0)])
        #expect(try f.exists(ref("other", "x")))
    }

    @Test("expire by age uses created, never accessed; by idle uses accessed")
    func expireExplicit() throws {
        let f = try cache(4)
        try f.store.write { tx in try tx.touch(ref("c", "k0")) }
        // Created 3,604…3,601 s ago; k0 accessed just now.
        #expect(keys(try f.store.expire(collection: "c", olderThan: 3602.5, idle: nil, dryRun: true)) == ["k0", "k1"])
        #expect(keys(try f.store.expire(collection: nil, olderThan: nil, idle: 3602.5, dryRun: true)) == ["k1"])
        #expect(expectCode(.invalidParams) { try f.store.expire(collection: nil, olderThan: nil, idle: nil) } != nil)
    }

    @Test("evict frees at least the bytes asked, from one owner or all")
    func evictBytes() throws {
        let f = try cache(6, owner: { $0 % 2 == 0 ? "alice" : "bob" })
        #expect(keys(try f.store.evict(bytes: 150, owner: nil, dryRun: true)) == ["k0", "k1"])
        #expect(keys(try f.store.evict(bytes: 150, owner: "bob", dryRun: true)) == ["k1", "k3"])
        #expect(keys(try f.store.evict(bytes: nil, owner: "alice", dryRun: true)) == ["k0", "k2", "k4"])
        #expect(expectCode(.invalidParams) { try f.store.evict(bytes: nil, owner: nil) } != nil)
    }

    @Test(
        "a dry run changes nothing, and the real run of the unchanged store does exactly its plan",
        arguments: [1, 3, 1000])
    func dryRunEqualsRealRun(batch: Int) throws {
        let f = try cache(
            12, owner: { $0 % 3 == 0 ? "alice" : "bob" },
            policy: policy {
                $0.maxBytes = 700
                $0.lowWater = 0.5
                $0.batch = batch
                $0.quotas = [.init(owner: "alice", maxBytes: 150)]
            })
        try f.store.write { tx in try tx.pin(ref("c", "k4")) }
        let commitBefore = try f.store.read { try $0.lastCommit() }
        let dry = try f.store.enforce(dryRun: true)
        #expect(try f.store.read { try $0.lastCommit() } == commitBefore)
        #expect(try f.store.read { try $0.objectCount() } == 12 && f.store.pending().isEmpty)
        #expect(dry.dryRun && dry.commits.isEmpty && !dry.objects.isEmpty)
        let real = try f.store.enforce()
        #expect(real.objects == dry.objects && real.files == dry.files && real.bytes == dry.bytes)
        #expect(real.commits.allSatisfy { $0.deleted.count <= batch })
        #expect(real.commits.flatMap(\.deleted).map(\.ref) == real.objects.map(\.ref))
    }

    @Test("a run deletes at most batch objects per transaction")
    func batching() throws {
        let f = try cache(
            25,
            policy: policy {
                $0.ttls = [.init(collection: "c", maxAge: 60)]; $0.batch = 10
            })
        let plan = try f.store.enforce()
        #expect(plan.commits.map(\.deleted.count) == [10, 10, 5])
        #expect(plan.objects.allSatisfy { $0.reason == .age })
    }

    @Test("progress is reported after each batch")
    func progress() throws {
        let f = try cache(
            5,
            policy: policy {
                $0.ttls = [.init(collection: "c", maxAge: 60)]; $0.batch = 2
            })
        let seen = ProgressLog()
        _ = try f.store.enforce(progress: { seen.add($0.deleted) })
        #expect(seen.values.last == 5 && seen.values.count >= 3)
    }

    @Test("a touch made between two batches of a run moves its object out of the later ones")
    func touchBetweenBatches() throws {
        let f = try cache(
            10,
            policy: policy {
                $0.maxBytes = 700; $0.lowWater = 1.0; $0.batch = 1
            })
        let store: Store = f.store
        let touched = Mutex(false)
        let plan = try store.enforce(progress: { p in
            // After the first batch's commit (k0 went), k1 is used: it is not the least recent any more.
            guard p.deleted == 1, !touched.withLock({ $0 }) else { return }
            touched.withLock { $0 = true }
            try? store.touch(ref("c", "k1"))
        })
        #expect(touched.withLock { $0 })
        #expect(keys(plan) == ["k0", "k2", "k3"], "k1 was used after the run began")
        #expect(try store.read { try $0.get(ref("c", "k1")) } != nil)
    }
}

private final class ProgressLog: @unchecked Sendable {  // written from the calling thread only
    var values: [Int] = []
    func add(_ v: Int) { values.append(v) }
}

@Suite("Lifecycle policies that fail partway")
struct PolicyFailureTests {
    @Test("a real run failing in a later batch reports what its committed batches deleted")
    func failureKeepsCompletedBatches() throws {
        let f = try cache(
            10,
            policy: policy {
                $0.ttls = [.init(collection: "c", maxAge: 60)]; $0.batch = 2
            })
        // Deleting k5 aborts (as a full disk or an I/O error would): the batch (k4, k5) fails.
        let q = try DatabaseQueue(path: f.dbPath)
        try q.write { db in
            try db.execute(
                sql: """
                    CREATE TRIGGER boom BEFORE DELETE ON object WHEN old.key = 'k5' BEGIN SELECT RAISE(ABORT, 'boom'); END
                    """)
        }
        try q.close()
        do {
            _ = try f.store.enforce()
            Issue.record("the run should have failed")
        } catch let failure as PolicyRunFailure {
            #expect(keys(failure.completed) == ["k0", "k1", "k2", "k3"])
            #expect(failure.completed.commits.map(\.deleted.count) == [2, 2])
            // Batch 2 unlinked batch 1's files beside it; the failed batch 3 had unlinked
            // batch 2's, whose rows stay queued for the sweep to finish.
            #expect(failure.completed.sweep?.unlinked == (0..<2).map { f.root + "/f\($0)" })
            #expect(Set(try f.store.pending().map(\.path)) == Set((2..<4).map { f.root + "/f\($0)" }))
            #expect((0..<4).allSatisfy { !f.exists(f.root + "/f\($0)") })
            #expect(try f.store.sweep().unlinked == (2..<4).map { f.root + "/f\($0)" })
        }
        #expect(try !f.exists(ref("c", "k3")) && f.exists(ref("c", "k4")))
    }

    @Test("a run failing in its first batch throws the plain error")
    func failureInFirstBatch() throws {
        let f = try cache(
            4,
            policy: policy {
                $0.ttls = [.init(collection: "c", maxAge: 60)]; $0.batch = 2
            })
        let q = try DatabaseQueue(path: f.dbPath)
        try q.write { db in
            try db.execute(sql: "CREATE TRIGGER boom BEFORE DELETE ON object BEGIN SELECT RAISE(ABORT, 'boom'); END")
        }
        try q.close()
        #expect(throws: (any Error).self) { try f.store.enforce() }
        do { _ = try f.store.enforce() } catch { #expect(!(error is PolicyRunFailure)) }
        #expect(try f.store.read { try $0.objectCount() } == 4)
    }
}
