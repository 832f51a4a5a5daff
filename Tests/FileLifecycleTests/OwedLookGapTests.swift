// Between an owed look, taken before the sweep's write transaction (OwedLooks.swift), and
// that transaction, other writers run: what they change there wins over the look. And a
// policy run's unlinks beside its batches take no look at all. The gap is reached through the
// walk's test hook, which a look calls with its root first (`FileProbe.stepHooks`).

import Foundation
import GRDB
import Synchronization
import Testing
@testable import AssetStore
import AssetStoreTestSupport

@Suite struct OwedLookGapTests {
    let t = TransientLookTests()

    /// Runs `body` with `during` called once, in the first look taken at `f.root`.
    func inLook<T>(_ f: Fixture, _ during: @escaping @Sendable () -> Void, _ body: () throws -> T) rethrows -> T {
        let (root, once) = (f.root, OwedLookTests.Once())
        FileProbe.stepHooks.withLock { $0[root] = { p in if p == root, once.first() { during() } } }
        FileProbe.anyStepHook.store(true, ordering: .relaxed)
        defer { FileProbe.stepHooks.withLock { $0[root] = nil } }
        let result = try body()
        #expect(!once.first(), "the look ran")
        return result
    }

    /// The queue's `identify` texts, through a connection of its own.
    func owedTexts(_ f: Fixture) throws -> [String?] {
        let q = try DatabaseQueue(path: f.dbPath)
        defer { try? q.close() }
        return try q.read { try String?.fetchAll($0, sql: "SELECT identify FROM unlink_queue ORDER BY id") }
    }

    @Test(
        "a row whose owed look changed after it was taken is left owing the new one, its file kept",
        .enabled(if: TransientLookTests.localTimes))
    func owedTextChangedInGap() throws {
        let f = try Fixture()
        let paths = try OwedLookBoundTests().owedFiles(f, 1, failing: "a") { "a/f\($0).bin" }
        let before = try #require(try owedTexts(f).first ?? nil)
        var look = try #require(OwedLook(text: before))
        look.since += 1
        // Another owed look written meanwhile, through a connection of its own (the writer is
        // free): the look taken answers the old text, not this one.
        let (db, text) = (f.dbPath, look.text)
        let sweep = try inLook(
            f,
            {
                let q = try? DatabaseQueue(path: db)
                try? q?.write { try $0.execute(sql: "UPDATE unlink_queue SET identify = ?", arguments: [text]) }
                try? q?.close()
            }
        ) { try f.store.sweep() }
        #expect(sweep.unlinked.isEmpty && sweep.skipped.isEmpty && sweep.failed.isEmpty, "\(sweep.unlinked)")
        #expect(try owedTexts(f) == [text])
        #expect(f.exists(paths[0]))
    }

    @Test(
        "a path registered again by a put from another thread during its owed look is kept, its row gone",
        .enabled(if: TransientLookTests.localTimes))
    func registeredAgainInGap() throws {
        let f = try Fixture()
        let paths = try OwedLookBoundTests().owedFiles(f, 1, failing: "a") { "a/f\($0).bin" }
        let put = Mutex<DispatchTimeoutResult?>(nil)
        let (store, path) = (f.store!, paths[0])
        let sweep = try inLook(
            f,
            {
                let done = DispatchSemaphore(value: 0)
                Thread {
                    _ = try? store.write { tx in try tx.put(ref("c", "again"), value: ["file": .string(path)]) }
                    done.signal()
                }.start()
                let waited = done.wait(timeout: .now() + 60)
                put.withLock { $0 = waited }
            }
        ) { try f.store.sweep() }
        #expect(put.withLock { $0 } == .success)
        #expect(sweep.unlinked.isEmpty && sweep.skipped.isEmpty, "\(sweep.unlinked)")
        #expect(try f.store.pending().isEmpty)
        #expect(f.exists(paths[0]))
        #expect(try f.exists(ref("c", "again")))
    }

    @Test(
        "a policy run's unlinks beside its batches take no owed look, nor unlink beside one left",
        .enabled(if: TransientLookTests.localTimes))
    func alongsideTakesNoLook() throws {
        var p = PolicyConfiguration()
        p.batch = 2
        let f = try Fixture {
            $0.policy = p
            $0.unlinkDelay = 0
        }
        // d/owed.bin registered before it existed, so its look at the delete is owed.
        let owed = f.root + "/d/owed.bin"
        try f.hold(owed, key: "k0")
        _ = try f.makeFile("d/owed.bin")
        try f.hold(try f.makeFile("d/sibling.bin"), key: "k1")
        f.clock.advance(10)
        let last = try f.makeFile("e/last.bin")
        try f.hold(last, key: "k2")
        f.clock.advance(3600)
        let looks = Mutex(0)
        let root = f.root
        FileProbe.stepHooks.withLock { $0[root] = { p in if p == root { looks.withLock { $0 += 1 } } } }
        FileProbe.anyStepHook.store(true, ordering: .relaxed)
        defer { FileProbe.stepHooks.withLock { $0[root] = nil } }
        let beside = Mutex<[[String]]>([])
        f.store.state.withLock { s in s.sweptAlongside = { paths in beside.withLock { $0.append(paths) } } }
        let plan = try t.failing(f.root, owed, EMFILE) {
            try f.store.expire(collection: "c", olderThan: 60, idle: nil)
        }
        #expect(plan.commits.map { Set($0.filesQueued) } == [[owed, f.root + "/d/sibling.bin"], [last]])
        let atDeletes = looks.withLock { $0 }
        // The second batch's transaction took the first's rows, and unlinked neither.
        #expect(beside.withLock { $0 } == [[]])
        #expect(plan.sweep?.unlinked ?? [] == [], "\(String(describing: plan.sweep))")
        #expect(f.exists(owed) && f.exists(f.root + "/d/sibling.bin"))
        try f.oweLater()
        let sweep = try f.store.sweep()
        #expect(looks.withLock { $0 } == atDeletes + 1)
        #expect(Set(sweep.unlinked) == [owed, f.root + "/d/sibling.bin", last], "skipped: \(sweep.skipped)")
    }
}
