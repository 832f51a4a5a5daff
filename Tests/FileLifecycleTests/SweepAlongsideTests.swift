// A policy run unlinks the files its earlier batches queued beside each later batch: only
// once the commit that queued them is durable, recorded in the batch's own transaction, the
// last batch's left to the sweep. A crash before such a batch commits leaves nothing leaked
// and nothing wrongly deleted.

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
            s.sweptAlongside = { paths in seen.withLock { $0.append((paths, store.durableCommit)) } }
        }
        let plan = try c.expire()
        #expect(plan.commits.map(\.deleted.count) == [10, 10, 10, 5])
        let queued = plan.commits.map(\.filesQueued)
        // Batch k's transaction unlinked batch k-1's files, and that commit was durable.
        let batches = seen.withLock { $0 }
        #expect(batches.map(\.paths) == Array(queued.prefix(3)))
        for (k, b) in batches.enumerated() { #expect(plan.commits[k].commit <= b.durable) }
        #expect(plan.sweep?.unlinked == queued.prefix(3).flatMap { $0 })
        for p in queued.prefix(3).flatMap({ $0 }) { #expect(!c.f.exists(p)) }
        // The last batch's files wait for the sweep.
        #expect(try store.pending().map(\.path) == queued[3])
        for p in queued[3] { #expect(c.f.exists(p)) }
        #expect(try store.sweep().unlinked == queued[3])
        #expect(c.onDisk() == Set(c.young + [c.shared]))
        #expect(try store.counters()["unlinked"] == 35)
    }

    @Test("with unlink_delay, batches unlink nothing until earlier batches' files are due, then all that are")
    func besideOnceDue() throws {
        let c = try Cache(unlinkDelay: 30)
        let clock = c.f.clock
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

    @Test("a crash before a batch that unlinked earlier files commits leaks nothing and deletes nothing wrongly")
    func crashMidExpiry() throws {
        let c = try Cache()
        let crash = c.f.dir + "/crash"
        try FileManager.default.createDirectory(atPath: crash, withIntermediateDirectories: true)
        let calls = Mutex(0)
        let dbPath = c.f.dbPath
        c.f.store.state.withLock { s in
            s.sweptAlongside = { _ in
                let call = calls.withLock { n in
                    n += 1
                    return n
                }
                guard call == 2 else { return }
                // What a crash here leaves: the database and its WAL as they are, batch 3
                // uncommitted, batch 2's files already unlinked.
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
        #expect(plan.commits.count == 2)
        let batch1 = plan.commits[0].filesQueued
        let batch2 = plan.commits[1].filesQueued
        for p in batch1 + batch2 { #expect(!c.f.exists(p)) }
        // The plan says what the two committed batches did and nothing of the third, which had
        // recorded its deletions before its unlinks beside failed.
        #expect(plan.objects.count == plan.commits.map(\.deleted.count).reduce(0, +))
        #expect(plan.files == batch1 + batch2)
        #expect(plan.bytes == plan.objects.map(\.bytes).reduce(0, +))

        // Restart from the crash image.
        c.f.store.close()
        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: dbPath + suffix) }
        for suffix in ["", "-wal"] {
            try FileManager.default.copyItem(atPath: crash + "/db" + suffix, toPath: dbPath + suffix)
        }
        try c.f.reopen(drain: false)
        // Nothing wrongly deleted: every object left has its files.
        #expect(try c.f.store.read { try $0.objectCount() } == 35 - 20 + 5)
        for i in 20..<35 { #expect(try c.f.exists(ref("c", "k\(i)")) && c.f.exists(c.old[i])) }
        // Batch 2's rows are still queued; the sweep finds their files gone and finishes them.
        #expect(try c.f.store.pending().map(\.path) == batch2)
        #expect(try c.f.store.sweep().unlinked == batch2)
        #expect(try c.f.store.pending().isEmpty)
        #expect(c.onDisk() == Set(c.old[20...] + c.young + [c.shared]))
        // And the expiry, run again, finishes the work.
        let rest = try c.expire()
        #expect(rest.objects.count == 15)
        _ = try c.f.store.sweep()
        #expect(try c.f.store.pending().isEmpty)
        #expect(c.onDisk() == Set(c.young + [c.shared]))
    }

    @Test("a step back of the wall clock mid-run does not keep the batches from unlinking what is due")
    func besideAfterStepBack() throws {
        let c = try Cache(unlinkDelay: 30)
        let clock = c.f.clock
        let plan = try c.f.store.expire(collection: "c", olderThan: 60, idle: nil) { p in
            if p.deleted == 10 { clock.step(-600) }
            if p.deleted == 20 { clock.advance(30) }
        }
        #expect(plan.commits.map(\.deleted.count) == [10, 10, 10, 5])
        let queued = plan.commits.map(\.filesQueued)
        // Batch 3 ran 30 s (steady) after batch 1: the files of batches 1 and 2 were due then,
        // those of batch 1 bounded to the stepped clock's now plus unlink_delay.
        #expect(plan.sweep?.unlinked == queued.prefix(2).flatMap { $0 })
        for p in queued.prefix(2).flatMap({ $0 }) { #expect(!c.f.exists(p)) }
    }

    @Test("a step forward of the wall clock mid-run unlinks no file before unlink_delay, nor reads the queue")
    func besideAfterStepForward() throws {
        let c = try Cache(unlinkDelay: 30)
        let clock = c.f.clock
        let store: Store = c.f.store
        let reads = Mutex([Int]())
        let plan = try store.expire(collection: "c", olderThan: 60, idle: nil) { p in
            if p.deleted == 10 { clock.step(3600) }
            if p.deleted == 20 { clock.advance(30) }
            reads.withLock { $0.append(store.alongsideReads.load(ordering: .relaxed)) }
        }
        #expect(plan.commits.map(\.deleted.count) == [10, 10, 10, 5])
        let queued = plan.commits.map(\.filesQueued)
        #expect(plan.sweep?.unlinked == queued.prefix(2).flatMap { $0 })
        // Batch 2 ran a step later on the wall clock but no time after batch 1: the queue was
        // not read for it (it had nothing due). Today it was, at once after the step.
        #expect(reads.withLock { $0 }.prefix(2) == [0, 0])
    }
}
