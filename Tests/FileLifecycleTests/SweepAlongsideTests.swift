// A policy run unlinks the files its earlier batches queued beside its later batches: only
// once the commit that queued them is durable, across commits while the run holds the writer
// (recorded by a later batch's transaction, the slice's last waiting for all), the last
// batch's left to the sweep. A put of such a path waits for the slice. A crash before the
// recording batch commits leaves nothing leaked and nothing wrongly deleted.

import Foundation
import Synchronization
import Testing
@testable import AssetStore
import AssetStoreTestSupport

/// 35 old objects `c/k0…` with a file each (four batches of 10), five young ones, and a file
/// `k0` shares with a young object: it must stay.
private struct Cache {
    let f: Fixture
    var old: [String] = []
    var young: [String] = []
    var shared = ""

    init(durability: StoreConfiguration.Durability = .full, unlinkDelay: Double = 0) throws {
        var p = PolicyConfiguration()
        p.batch = 10
        f = try Fixture {
            $0.durability = durability
            $0.policy = p
            $0.unlinkDelay = unlinkDelay
        }
        shared = try f.makeFile("shared.bin")
        for i in 0..<35 {
            let path = try f.makeFile("d\(i / 10)/k\(i).bin", size: 10 + i)
            old.append(path)
            let value: JSONValue =
                i == 0 ? ["file": [.string(path), .string(shared)]] : ["file": .string(path)]
            try f.put([(ref("c", "k\(i)"), value)])
        }
        f.clock.advance(3600)  // past min_age and the cutoff
        for i in 0..<5 {
            let path = try f.makeFile("young/y\(i).bin")
            young.append(path)
            let value: JSONValue =
                i == 0 ? ["file": [.string(path), .string(shared)]] : ["file": .string(path)]
            try f.put([(ref("c", "y\(i)"), value)])
        }
    }

    func expire() throws -> PolicyPlan { try f.store.expire(collection: "c", olderThan: 60, idle: nil) }

    /// Paths of files under the root now.
    func onDisk() -> Set<String> {
        let all = FileManager.default.enumerator(atPath: f.root)?.compactMap { $0 as? String } ?? []
        return Set(all.filter { $0.hasSuffix(".bin") }.map { f.root + "/" + $0 })
    }
}

private struct SimulatedCrash: Error {}

@Suite("Unlinks beside a policy run's batches")
struct SweepAlongsideTests {
    @Test(
        "each batch unlinks the files earlier batches queued, once their commit is durable",
        arguments: StoreConfiguration.Durability.allCases)
    func besideLaterBatches(durability: StoreConfiguration.Durability) throws {
        let c = try Cache(durability: durability)
        let seen = Mutex<[(paths: [String], durable: Int64)]>([])
        let store = c.f.store!
        store.state.withLock { s in
            s.policySliceBatches = 100  // one slice: the run's batches record in a known order
            s.sweptAlongside = { paths in seen.withLock { $0.append((paths, store.durableCommit)) } }
        }
        let plan = try c.expire()
        #expect(plan.commits.map(\.deleted.count) == [10, 10, 10, 5])
        let queued = plan.commits.map(\.filesQueued)
        // Batch 1's files went beside batches 2 and 3 and were recorded by batch 3; the last
        // batch recorded batch 2's and batch 3's, which it waited for; each after the
        // commit that queued them was durable.
        let batches = seen.withLock { $0 }
        #expect(batches.map(\.paths) == [queued[0], queued[1] + queued[2]])
        #expect(batches.count == 2 && plan.commits[0].commit <= batches[0].durable)
        #expect(batches.count == 2 && plan.commits[2].commit <= batches[1].durable)
        #expect(plan.sweep?.unlinked == queued.prefix(3).flatMap { $0 })
        for p in queued.prefix(3).flatMap({ $0 }) { #expect(!c.f.exists(p)) }
        // The last batch's files wait for the sweep.
        #expect(try store.pending().map(\.path) == queued[3])
        for p in queued[3] { #expect(c.f.exists(p)) }
        #expect(try store.sweep().unlinked == queued[3])
        #expect(c.onDisk() == Set(c.young + [c.shared]))
        #expect(try store.counters()["unlinked"] == 35)
    }

    @Test("unlinks started in a batch's transaction go on across its commit, recorded by a later batch")
    func acrossCommits() throws {
        let c = try Cache()
        let store = c.f.store!
        let started = Mutex<[(paths: [String], durable: Int64)]>([])
        let recorded = Mutex<[(paths: [String], durable: Int64)]>([])
        store.state.withLock { s in
            s.policySliceBatches = 100
            s.unlinksBesideStarted = { paths in started.withLock { $0.append((paths, store.durableCommit)) } }
            s.sweptAlongside = { paths in recorded.withLock { $0.append((paths, store.durableCommit)) } }
        }
        let plan = try c.expire()
        let queued = plan.commits.map(\.filesQueued)
        let s = started.withLock { $0 }
        let r = recorded.withLock { $0 }
        try #require(s.count == 3 && r.count == 2)
        // Batch 1's files: taken in batch 2's transaction (batch 1's commit the last), recorded
        // in batch 3's (batch 2's commit the last): their unlinks crossed batch 2's commit.
        #expect(s[0].paths == queued[0] && s[0].durable == plan.commits[0].commit)
        #expect(r[0].paths == queued[0] && r[0].durable == plan.commits[1].commit)
        #expect(s[1].paths == queued[1] && s[1].durable == plan.commits[1].commit)
        #expect(s[2].paths == queued[2] && s[2].durable == plan.commits[2].commit)
        #expect(try store.counters()["unlinked"] == 30)
    }

    @Test("a slice of one batch records its own unlinks before its commit, as each batch did before")
    func sliceOfOneBatch() throws {
        let c = try Cache()
        let store = c.f.store!
        let seen = Mutex<[[String]]>([])
        store.state.withLock { s in
            s.policySliceBatches = 1
            s.sweptAlongside = { paths in seen.withLock { $0.append(paths) } }
        }
        let plan = try c.expire()
        let queued = plan.commits.map(\.filesQueued)
        #expect(seen.withLock { $0 } == Array(queued.prefix(3)))
        #expect(plan.sweep?.unlinked == queued.prefix(3).flatMap { $0 })
    }

    @Test("a put of a path being unlinked beside the run waits for the run's writer slice")
    func putWaitsForTheSlice() throws {
        let c = try Cache()
        let store = c.f.store!
        let started = Mutex<[[String]]>([])
        let put = Mutex<(tid: pid_t, commit: Int64?, error: String?)>((0, nil, nil))
        let asleep = Mutex<Bool?>(nil)
        let putDone = DispatchGroup()
        store.state.withLock { s in
            s.policySliceBatches = 100
            s.unlinksBesideStarted = { paths in started.withLock { $0.append(paths) } }
            s.betweenPolicyBatches = {
                // After batch 2's commit: batch 1's files are being unlinked, taken by batch 2's
                // transaction. A client puts an object holding one of them.
                guard asleep.withLock({ $0 }) == nil, let path = started.withLock({ $0.first?.first }) else { return }
                let tid = Mutex<pid_t>(0)
                let ready = DispatchSemaphore(value: 0)
                putDone.enter()
                Thread {
                    tid.withLock { $0 = currentThreadID() }
                    ready.signal()
                    do {
                        let c = try store.write { tx in try tx.put(ref("p", "again"), value: ["file": .string(path)]) }
                        put.withLock { $0.commit = c.report.commit }
                    } catch {
                        put.withLock { $0.error = "\(error)" }
                    }
                    putDone.leave()
                }.start()
                ready.wait()
                // It waits for the writer, which this run holds.
                asleep.withLock { $0 = threadSleeps(tid.withLock { $0 }) && put.withLock { $0.commit == nil } }
            }
        }
        let plan = try c.expire()
        putDone.wait()
        #expect(asleep.withLock { $0 } == true)
        let p = put.withLock { $0 }
        #expect(p.error == nil)
        // It committed after every batch of the slice, the one recording the unlink among them.
        #expect((p.commit ?? 0) > (plan.commits.last?.commit ?? .max))
        let path = try #require(started.withLock { $0.first?.first })
        #expect(plan.sweep?.unlinked.contains(path) == true)
        #expect(try !store.pending(limit: 1000).contains { $0.path == path })
        // The object holds a file that was unlinked before it was referenced, not after.
        #expect(try c.f.exists(ref("p", "again")))
    }

    @Test("a file leased while its unlink beside the run goes on across a commit is kept and deferred")
    func leaseAcrossCommit() throws {
        let c = try Cache()
        let store = c.f.store!
        let target = Mutex<String?>(nil)
        let reached = DispatchSemaphore(value: 0)
        let leased = DispatchSemaphore(value: 0)
        let asked = Mutex(false)
        store.state.withLock { s in
            s.policySliceBatches = 100
            s.unlinksBesideStarted = { paths in target.withLock { t in t = t ?? paths.first } }
            // Batch 1's first file, on its unlink thread before its lease check, waits to be leased.
            s.unlinkingBeside = { path in
                guard path == target.withLock({ $0 }) else { return }
                reached.signal()
                leased.wait()
            }
            // After batch 2's commit, with batch 1's unlinks under way: a client leases that file.
            s.betweenPolicyBatches = {
                guard let path = target.withLock({ $0 }),
                    !asked.withLock({ a in
                        defer { a = true }; return a
                    })
                else {
                    return
                }
                reached.wait()
                _ = try? store.leases.acquire(objects: [], files: [path], ttl: 600)
                leased.signal()
            }
        }
        let plan = try c.expire()
        let path = try #require(target.withLock { $0 })
        #expect(asked.withLock { $0 })
        #expect(c.f.exists(path))
        #expect(plan.sweep?.unlinked.contains(path) == false)
        #expect(plan.sweep?.deferred.contains { $0.path == path && $0.reason == .leased } == true)
        #expect(try store.pending(limit: 1000).contains { $0.path == path && $0.deferred == .leased })
    }

    @Test("with unlink_delay, batches unlink nothing until earlier batches' files are due, then all that are")
    func besideOnceDue() throws {
        let c = try Cache(unlinkDelay: 30)
        let clock = c.f.clock
        // Between batches 2 and 3 (nothing is under way beside them: the run lets the writer
        // go after each, and tells its progress).
        let plan = try c.f.store.expire(collection: "c", olderThan: 60, idle: nil) { p in
            if p.deleted == 20 { clock.advance(30) }
        }
        #expect(plan.commits.map(\.deleted.count) == [10, 10, 10, 5])
        let queued = plan.commits.map(\.filesQueued)
        // Batch 2 found nothing due; batch 3 ran 30 s on, when the files of batches 1 and 2 were.
        #expect(plan.sweep?.unlinked == queued.prefix(2).flatMap { $0 })
        for p in queued.prefix(2).flatMap({ $0 }) { #expect(!c.f.exists(p)) }
        #expect(Set(try c.f.store.pending().map(\.path)) == Set(queued.suffix(2).flatMap { $0 }))
        for p in queued.suffix(2).flatMap({ $0 }) { #expect(c.f.exists(p)) }
    }

    @Test("a run of one batch unlinks nothing itself; files queued before the run wait for the sweep")
    func oneBatchLeavesTheSweep() throws {
        let f = try Fixture()
        let before = try f.makeFile("before.bin")
        try f.put([(ref("x", "b"), ["file": .string(before)])])
        try f.delete(ref("x", "b"))
        let path = try f.makeFile("old.bin")
        try f.put([(ref("c", "k"), ["file": .string(path)])])
        f.clock.advance(3600)
        let plan = try f.store.expire(collection: "c", olderThan: 60, idle: nil)
        #expect(plan.sweep == nil && plan.objects.count == 1)
        #expect(f.exists(before) && f.exists(path))
        #expect(Set(try f.store.pending().map(\.path)) == [before, path])
    }

    @Test("a crash before a batch that recorded earlier unlinks commits leaks nothing and deletes nothing wrongly")
    func crashMidExpiry() throws {
        let c = try Cache()
        let crash = c.f.dir + "/crash"
        try FileManager.default.createDirectory(atPath: crash, withIntermediateDirectories: true)
        let calls = Mutex(0)
        let dbPath = c.f.dbPath
        c.f.store.state.withLock { s in
            s.policySliceBatches = 100
            s.sweptAlongside = { _ in
                let call = calls.withLock { n in
                    n += 1
                    return n
                }
                guard call == 2 else { return }
                // What a crash here leaves: the database and its WAL as they are, batch 4
                // uncommitted, batch 1's unlinks recorded by batch 3, batches 2 and 3's files
                // unlinked but not recorded.
                for suffix in ["", "-wal"] {
                    try FileManager.default.copyItem(atPath: dbPath + suffix, toPath: crash + "/db" + suffix)
                }
                throw SimulatedCrash()
            }
        }
        var completed: PolicyPlan?
        do {
            _ = try c.expire()
        } catch let e as PolicyRunFailure {
            completed = e.completed
        }
        let plan = try #require(completed)
        // Three batches committed; after the fourth failed, the run recorded the unlinks it
        // had done beside it (batches 2 and 3's files) in a commit of their own.
        #expect(plan.commits.map(\.deleted.count) == [10, 10, 10, 0])
        let queued = plan.commits.map(\.filesQueued)
        // Every unlink under way finished before the run failed: none goes on behind it.
        for p in queued.flatMap({ $0 }) { #expect(!c.f.exists(p)) }
        // The plan says what the three batches did, nothing of the fourth, and every unlink.
        #expect(plan.objects.count == 30)
        #expect(plan.files == queued.flatMap { $0 })
        #expect(plan.bytes == plan.objects.map(\.bytes).reduce(0, +))
        #expect(plan.sweep?.unlinked == queued.flatMap { $0 })
        #expect(try c.f.store.pending().isEmpty)

        // Restart from the crash image.
        c.f.store.close()
        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: dbPath + suffix) }
        for suffix in ["", "-wal"] {
            try FileManager.default.copyItem(atPath: crash + "/db" + suffix, toPath: dbPath + suffix)
        }
        try c.f.reopen(drain: false)
        // Nothing wrongly deleted: every object left has its files.
        #expect(try c.f.store.read { try $0.objectCount() } == 35 - 30 + 5)
        for i in 30..<35 { #expect(try c.f.exists(ref("c", "k\(i)")) && c.f.exists(c.old[i])) }
        // Batches 2 and 3's rows are still queued; the sweep finds their files gone and finishes them.
        #expect(try c.f.store.pending().map(\.path) == queued[1] + queued[2])
        #expect(try c.f.store.sweep().unlinked == queued[1] + queued[2])
        #expect(try c.f.store.pending().isEmpty)
        #expect(c.onDisk() == Set(c.old[30...] + c.young + [c.shared]))
        // And the expiry, run again, finishes the work.
        let rest = try c.expire()
        #expect(rest.objects.count == 5)
        _ = try c.f.store.sweep()
        #expect(try c.f.store.pending().isEmpty)
        #expect(c.onDisk() == Set(c.young + [c.shared]))
    }
}
