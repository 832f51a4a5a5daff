// A min_free out of reach (assetd.toml(5), [policy]): other programs' files fill an 8 MiB tmpfs
// mounted as the managed root until evicting every file assetd holds there could not meet the
// floor. The floor in effect is then capped at the room free when that was found: nothing the
// cache held is evicted for room it cannot win back, what it adds is. Needs CAP_SYS_ADMIN.

import AssetStore
import AssetStoreTestSupport
import Foundation
import Glibc
import Synchronization
import Testing

private let kib: Int64 = 1 << 10
private let mib: Int64 = 1 << 20

/// Free bytes on the filesystem of `path`, as min_free measures them.
private func freeBytes(_ path: String) -> Int64 {
    var vfs = statvfs()
    guard statvfs(path, &vfs) == 0 else { return -1 }
    return Int64(vfs.f_bavail) * Int64(vfs.f_frsize)
}

/// Another program's file of `size` bytes on the root's filesystem (registered nowhere).
private func filler(_ f: Fixture, _ size: Int64) {
    #expect(truncate(f.root + "/other", 0) == 0 || errno == ENOENT)
    let fd = open(f.root + "/other", O_WRONLY | O_CREAT, 0o600)
    defer { close(fd) }
    #expect(fd >= 0 && posix_fallocate(fd, 0, off_t(size)) == 0)
}

@Suite(.enabled(if: Tmpfs.available, "mounting a tmpfs needs CAP_SYS_ADMIN"))
struct MinFreeCapTests {
    /// An 8 MiB root holding `n` objects of 512 KiB (k0 least recently used) and 5 MiB of
    /// another program's: 1 MiB free, 3 MiB at most with the cache gone, min_free 4 MiB.
    func outOfReach(_ fixture: Fixture? = nil, _ body: (Fixture) throws -> Void) throws {
        let f = try fixture ?? Fixture()
        #expect(Tmpfs.mount(f.root, mib: 8))
        defer { Tmpfs.unmount(f.root) }
        try put(f, 0..<4)
        filler(f, 5 * mib)
        var p = PolicyConfiguration()
        p.minFree = 4 * mib
        p.order = .lru
        f.store.policy = p
        f.configuration.policy = p  // as a restart opens it
        try body(f)
    }

    func put(_ f: Fixture, _ keys: Range<Int>) throws {
        for i in keys {
            try f.put([(ref("c", "k\(i)"), ["file": .string(try f.makeFile("f\(i)", size: Int(512 * kib)))])])
            f.clock.advance(1)
        }
        f.clock.advance(3600)
    }

    func keys(_ plan: PolicyPlan) -> [String] { plan.objects.map(\.ref.key) }

    @Test("a min_free out of reach evicts nothing the cache held, caps the floor at the room free, and says so")
    func capEngages() throws {
        try outOfReach { f in
            let free = freeBytes(f.root)
            #expect(free == mib)
            let dry = try f.store.enforce(dryRun: true)
            #expect(keys(dry).isEmpty && f.store.minFreeCaps.isEmpty, "a dry run keeps its cap to itself")
            let plan = try f.store.enforce()
            #expect(keys(plan).isEmpty, "main evicted every object and still fell short")
            let cap = try #require(plan.minFreeCaps.first)
            #expect(cap.cap == free && cap.share == 2 * mib && cap.reachable == 3 * mib && cap.minFree == 4 * mib)
            #expect(cap.root == f.root && dry.minFreeCaps == [cap] && f.store.minFreeCaps == [cap])
            #expect(plan.json["min_free_caps"]?.arrayValue?.first?["cap"] == .int(mib))
            #expect(f.store.takeMinFreeCapChanges() == [.engaged(cap)])
            // The next run keeps it, quietly.
            #expect(try keys(f.store.enforce()).isEmpty && f.store.takeMinFreeCapChanges().isEmpty)
        }
    }

    @Test("what the cache adds once the cap engaged is evicted back to it: the cache cannot fill the disk")
    func growthEvictedBack() throws {
        try outOfReach { f in
            let cap = try #require(try f.store.enforce().minFreeCaps.first)
            try put(f, 4..<6)  // 1 MiB more: nothing free
            #expect(freeBytes(f.root) == 0)
            let plan = try f.store.enforce()
            #expect(keys(plan) == ["k0", "k1"], "the skip of 0.14 evicted nothing here")
            #expect(plan.objects.allSatisfy { $0.reason == .minFree })
            #expect(plan.minFreeCaps.map(\.cap) == [cap.cap])
            _ = try f.store.sweep()
            #expect(freeBytes(f.root) == cap.cap)
        }
    }

    @Test("other programs taking more room after the cap engaged make the cache give it up, as min_free does")
    func othersTakeMore() throws {
        try outOfReach { f in
            _ = try f.store.enforce()
            filler(f, 5 * mib + 512 * kib)
            let plan = try f.store.enforce()
            #expect(keys(plan) == ["k0"])
            #expect(plan.minFreeCaps.map(\.share) == [mib + 512 * kib])
            _ = try f.store.sweep()
            filler(f, 6 * mib + 512 * kib)  // the last free MiB: two more files go, k3 stays
            #expect(try keys(f.store.enforce()) == ["k1", "k2"])
            #expect(f.store.minFreeCaps.map(\.share) == [512 * kib] && f.store.minFreeCaps.map(\.cap) == [mib])
        }
    }

    @Test("the cap outlives a restart: what the cache added before it is still evicted back to the cap")
    func capOutlivesRestart() throws {
        try outOfReach { f in
            let cap = try #require(try f.store.enforce().minFreeCaps.first)
            try put(f, 4..<6)
            #expect(freeBytes(f.root) == 0)
            try f.reopen()
            #expect(f.store.minFreeCaps == [cap])
            let plan = try f.store.enforce()
            #expect(keys(plan) == ["k0", "k1"], "a cap in memory only engaged anew at nothing free and kept them")
            #expect(plan.minFreeCaps.map(\.cap) == [cap.cap] && f.store.takeMinFreeCapChanges().isEmpty)
        }
    }

    @Test("min_free set back by a reload to the floor of a recorded cap applies the cap, as a restart does")
    func reloadFindsRecordedCap() throws {
        try outOfReach { f in
            let cap = try #require(try f.store.enforce().minFreeCaps.first)
            try put(f, 4..<6)
            let p = try #require(f.store.policy)
            var without = p
            without.minFree = nil
            f.store.policy = without
            f.store.policy = p
            #expect(f.store.minFreeCaps.isEmpty)
            let plan = try f.store.enforce()
            #expect(keys(plan) == ["k0", "k1"], "a cap engaged anew at nothing free kept what the cache added")
            #expect(plan.minFreeCaps.map(\.cap) == [cap.cap])
        }
    }

    @Test("a file written before its put takes room from the share only until the put: then it is the cache's")
    func fileStraddlesRuns() throws {
        try outOfReach { f in
            _ = try f.store.enforce()
            let path = try f.makeFile("f4", size: Int(512 * kib))  // registered by the next put
            #expect(try keys(f.store.enforce()) == ["k0"], "others' so far: the cache gives way")
            _ = try f.store.sweep()
            try f.put([(ref("c", "k4"), ["file": .string(path)])])
            let plan = try f.store.enforce()
            #expect(keys(plan).isEmpty, "a share that only shrinks kept the dip and evicted k1")
            #expect(plan.minFreeCaps.map(\.cap) == [mib] && plan.minFreeCaps.map(\.share) == [2 * mib])
        }
    }

    @Test("other programs' files growing and shrinking back take from the share only while they are bigger")
    func othersCycle() throws {
        try outOfReach { f in
            _ = try f.store.enforce()
            var evicted = [String]()
            for _ in 0..<3 {
                for size in [5 * mib + 512 * kib, 5 * mib] {
                    filler(f, size)
                    evicted += try keys(f.store.enforce())
                    _ = try f.store.sweep()
                }
            }
            #expect(evicted == ["k0"], "a share that only shrinks evicted one more object each cycle")
        }
    }

    @Test(
        "room other programs free while the floor is still out of reach raises the cap: the cache does not grow into it"
    )
    func othersFreeSome() throws {
        try outOfReach { f in
            _ = try f.store.enforce()
            filler(f, 4 * mib + 512 * kib)  // 512 KiB freed: 3.5 MiB reachable, still short
            #expect(try keys(f.store.enforce()).isEmpty)
            #expect(f.store.minFreeCaps.map(\.cap) == [mib + 512 * kib])
            try put(f, 4..<5)
            #expect(try keys(f.store.enforce()) == ["k0"])
        }
    }

    @Test("once the floor can be met again the cap lifts and the configured min_free applies")
    func capLifts() throws {
        try outOfReach { f in
            let cap = try #require(try f.store.enforce().minFreeCaps.first)
            _ = f.store.takeMinFreeCapChanges()
            filler(f, 2 * mib + 512 * kib)  // 3.5 MiB free, 5.5 MiB reachable: 512 KiB short of 4 MiB
            let plan = try f.store.enforce()
            #expect(keys(plan) == ["k0"] && plan.minFreeCaps.isEmpty && f.store.minFreeCaps.isEmpty)
            #expect(f.store.takeMinFreeCapChanges() == [.lifted(cap, reachable: 5 * mib + 512 * kib)])
        }
    }

    @Test("a floor moving across the edge lifts its cap only past a margin: one engagement, nothing evicted")
    func edgeMargin() throws {
        try outOfReach { f in
            _ = try f.store.enforce()
            for _ in 0..<2 {
                filler(f, 3 * mib + 768 * kib)  // 4.25 MiB reachable: the floor met, by less than the margin
                #expect(try keys(f.store.enforce()).isEmpty, "lifted at the floor: evicted for all of it")
                #expect(f.store.minFreeCaps.map(\.cap) == [2 * mib + 256 * kib])
                filler(f, 5 * mib)
                #expect(try keys(f.store.enforce()).isEmpty)
            }
            #expect(f.store.takeMinFreeCapChanges().count == 1, "one engagement, not one a crossing")
        }
    }

    @Test("a cap judged for the min_free a run began with is not kept once a reload changed it")
    func reloadDuringRun() throws {
        try outOfReach { f in
            var p = try #require(f.store.policy)
            p.ttls = [.init(collection: "none", maxAge: 1e9)]  // a step before min_free, reporting its batch
            f.store.policy = p
            let lowered = {
                var q = p
                q.minFree = 2 * mib
                return q
            }()
            let store: Store = f.store
            let reloaded = Mutex(false)
            _ = try store.enforce(progress: { _ in
                let first = reloaded.withLock { r in
                    defer { r = true }
                    return !r
                }
                if first { store.policy = lowered }
            })
            #expect(store.minFreeCaps.isEmpty, "a cap of the floor replaced was kept, shown in stats")
            #expect(store.takeMinFreeCapChanges().isEmpty)
        }
    }

    @Test("a changed min_free drops the cap: the next run judges the new floor")
    func changedFloorDropsCap() throws {
        try outOfReach { f in
            let cap = try #require(try f.store.enforce().minFreeCaps.first)
            _ = f.store.takeMinFreeCapChanges()
            var p = try #require(f.store.policy)
            p.minFree = 2 * mib
            f.store.policy = p
            #expect(f.store.minFreeCaps.isEmpty && f.store.takeMinFreeCapChanges() == [.dropped(cap)])
            #expect(try keys(f.store.enforce()) == ["k0", "k1"])
        }
    }
}
