// A step of the wall clock (NTP's first sync, `date -s`, a virtual machine resumed) must not
// end the delays that protect: a lease's ttl, files.unlink_delay, policy min_age,
// files.orphan_grace (assetd(8), The clocks; ClockSteps.swift). The test clock's `step`
// moves the wall clock alone, `advance` both it and the steady clock, as time passing.

@testable import AssetStore
import AssetStoreTestSupport
import Foundation
import Synchronization
import Testing

@Suite struct ClockStepTests {
    @Test("a lease outlives a step forward of the wall clock, and shows its expiry on the stepped clock")
    func leaseSurvivesStep() throws {
        let f = try Fixture()
        let path = try f.makeFile("a/one.bin")
        try f.hold(path, key: "k")
        let lease = try f.store.leases.acquire(objects: [], files: [path], ttl: 600, holder: 7)
        #expect(try f.delete(ref("c", "k")).filesQueued == [path])
        #expect(try f.store.sweep().deferred.map(\.reason) == [.leased])

        f.clock.advance(2)
        f.clock.step(3600)
        #expect(f.store.leases.removeExpired().isEmpty)
        let sweep = try f.store.sweep()
        #expect(sweep.unlinked.isEmpty)
        #expect(f.exists(path))
        let live = try #require(f.store.leases.live(lease.id))
        #expect(live.expires == f.clock.now + 598)
        let row = try #require(try f.store.pending().first)
        #expect(row.deferred == .leased && row.nextAttempt == f.clock.now + 598)

        f.clock.advance(598)
        #expect(f.store.leases.removeExpired().map(\.id) == [lease.id])
        #expect(try f.store.sweep().unlinked == [path])
    }

    @Test("a queued file waits out files.unlink_delay across a step forward of the wall clock")
    func unlinkDelaySurvivesStep() throws {
        let f = try Fixture { $0.unlinkDelay = 600 }
        let path = try f.makeFile("a/one.bin")
        try f.hold(path, key: "k")
        #expect(try f.delete(ref("c", "k")).filesQueued == [path])

        let queued = try #require(try f.store.pending().first?.nextAttempt)
        f.clock.advance(2)
        f.clock.step(3600)
        #expect(try f.store.sweep().unlinked.isEmpty)
        #expect(f.exists(path))
        // Shown as due when it is: the step later on the wall clock.
        #expect(try f.store.pending().first?.nextAttempt == queued + 3600)
        // Queued after the step: aged on the wall clock alone.
        let later = try f.makeFile("a/two.bin")
        try f.hold(later, key: "k2")
        #expect(try f.delete(ref("c", "k2")).filesQueued == [later])

        f.clock.advance(597)
        #expect(try f.store.sweep().unlinked.isEmpty)
        f.clock.advance(1)
        #expect(try f.store.sweep().unlinked == [path])
        f.clock.advance(2)
        #expect(try f.store.sweep().unlinked == [later])
    }

    @Test("a step back of the wall clock parks no queued file past now plus files.unlink_delay")
    func stepBackBounded() throws {
        let f = try Fixture { $0.unlinkDelay = 600 }
        let path = try f.makeFile("a/one.bin")
        try f.hold(path, key: "k")
        #expect(try f.delete(ref("c", "k")).filesQueued == [path])

        f.clock.step(-86_400)
        #expect(try f.store.sweep().unlinked.isEmpty)
        #expect(try f.store.pending().first?.nextAttempt == f.clock.now + 600)
        f.clock.advance(599)
        #expect(try f.store.sweep().unlinked.isEmpty)
        f.clock.advance(1)
        #expect(try f.store.sweep().unlinked == [path])
    }

    @Test("a step back's bound of the queue takes write transactions of a chunk of rows each, not one")
    func stepBackBoundInChunks() throws {
        let f = try Fixture { $0.unlinkDelay = 600 }
        var paths = [String]()
        for i in 0..<25 {
            let path = try f.makeFile("a/\(i).bin")
            try f.hold(path, key: "k\(i)")
            paths.append(path)
        }
        for i in 0..<25 { _ = try f.delete(ref("c", "k\(i)")) }
        Store.boundChunk.store(10, ordering: .relaxed)
        defer { Store.boundChunk.store(1000, ordering: .relaxed) }
        f.clock.step(-86_400)
        #expect(try f.store.sweep().unlinked.isEmpty)
        #expect(f.store.boundTransactions.load(ordering: .relaxed) == 3, "25 rows in chunks of 10")
        #expect(try f.store.pending().allSatisfy { $0.nextAttempt == f.clock.now + 600 })
        f.clock.advance(600)
        #expect(Set(try f.store.sweep().unlinked) == Set(paths))
    }

    @Test("a step back then forward of the wall clock does not unlink a queued file before files.unlink_delay")
    func stepBackThenForward() throws {
        let f = try Fixture { $0.unlinkDelay = 600 }
        let path = try f.makeFile("a/one.bin")
        try f.hold(path, key: "k")
        #expect(try f.delete(ref("c", "k")).filesQueued == [path])

        f.clock.advance(1)
        f.clock.step(-86_400)
        #expect(try f.store.sweep().unlinked.isEmpty)  // bounded to now + 600 on the stepped clock
        f.clock.advance(1)
        f.clock.step(86_400)
        #expect(try f.store.sweep().unlinked.isEmpty, "2 s after its commit")
        f.clock.advance(590)
        #expect(try f.store.sweep().unlinked.isEmpty)
        f.clock.advance(10)
        #expect(try f.store.sweep().unlinked == [path])
    }

    @Test("a step back of the wall clock between two runs parks no queued file past now plus files.unlink_delay")
    func stepBackAcrossRestart() throws {
        let f = try Fixture { $0.unlinkDelay = 600 }
        let path = try f.makeFile("a/one.bin")
        try f.hold(path, key: "k")
        #expect(try f.delete(ref("c", "k")).filesQueued == [path])

        f.clock.step(-86_400)
        try f.reopen()
        #expect(try f.store.pending().first?.nextAttempt == f.clock.now + 600)
        f.clock.advance(600)
        #expect(try f.store.sweep().unlinked == [path])
    }

    @Test("objects younger than min_age are not evicted after a step forward of the wall clock")
    func minAgeSurvivesStep() throws {
        var p = PolicyConfiguration()
        p.order = .lru
        p.maxBytes = 5
        p.minAge = 3600
        let f = try Fixture { $0.policy = p }
        for i in 0..<3 {
            try f.put([(ref("c", "k\(i)"), ["file": .string(try f.makeFile("f\(i)"))])])
        }
        f.clock.advance(5)
        f.clock.step(7200)
        let plan = try f.store.enforce()
        #expect(plan.objects.isEmpty)
        #expect(plan.skipped[.tooYoung] == 3)
        // Put after the step: aged on the wall clock alone.
        try f.put([(ref("c", "late"), ["file": .string(try f.makeFile("late"))])])

        f.clock.advance(3594)
        #expect(try f.store.enforce().objects.isEmpty)
        f.clock.advance(1)
        #expect(try f.store.enforce().objects.map(\.ref.key).sorted() == ["k0", "k1", "k2"])
        f.clock.advance(5)
        #expect(try f.store.enforce().objects.map(\.ref.key) == ["late"])
    }

    @Test("objects younger than min_age are not evicted after a step back and then forward of the wall clock")
    func minAgeSurvivesBackThenForward() throws {
        var p = PolicyConfiguration()
        p.order = .lru
        p.maxBytes = 5
        p.minAge = 3600
        let f = try Fixture { $0.policy = p }
        for i in 0..<3 {
            try f.put([(ref("c", "k\(i)"), ["file": .string(try f.makeFile("f\(i)"))])])
        }
        f.clock.advance(2)
        f.clock.step(-3600)
        #expect(try f.store.enforce().objects.isEmpty)
        f.clock.advance(2)
        f.clock.step(7200)
        let plan = try f.store.enforce()
        #expect(plan.objects.isEmpty, "4 s old by the steady clock")
        #expect(plan.skipped[.tooYoung] == 3)
    }

    @Test("a file within files.orphan_grace is no orphan after a step forward of the wall clock")
    func orphanGraceSurvivesStep() throws {
        // Real time, moved on when told: the file's ctime is the kernel's, not the fixture's.
        let moved = TestClock()
        let (wall, steady) = (moved.now, moved.steady)
        let f = try Fixture {
            $0.clock = { Date().timeIntervalSince1970 + (moved.now - wall) }
            $0.steadyClock = { Date().timeIntervalSince1970 + (moved.steady - steady) }
        }
        let upload = try f.makeFile("incoming/upload.part")
        moved.step(7200)
        let r = try f.verify(orphans: true, deleteOrphans: true)
        #expect(r.of("orphan").isEmpty, "\(r.problems)")
        #expect(f.exists(upload))

        moved.advance(f.configuration.orphanGrace + 10)
        #expect(try f.verify(orphans: true).of("orphan").map { $0.subject["path"] } == [.string(upload)])
    }

    @Test("an unlink failing seconds before a step forward of the wall clock is not reported as failing for the step")
    func failingForSurvivesStep() throws {
        let f = try Fixture()
        let p = try f.makeFile("locked/x.bin")
        try f.hold(p, key: "x")
        let obstacle = try UnlinkObstacle(p, in: f)
        defer { obstacle.remove() }
        try f.delete(ref("c", "x"))
        _ = try f.store.sweep()
        #expect(try f.store.pending().first?.attempts == 1)
        f.clock.advance(2)
        f.clock.step(2 * 86_400)
        #expect(try f.verify().of("unlink_failing").isEmpty, "failing 2 s by the steady clock")

        f.clock.advance(86_400)
        #expect(try f.verify().of("unlink_failing").map { $0.subject["path"] } == [.string(p)])
    }
}
