// min_free (assetd.toml(5), [policy]) on a real filesystem whose free space the test controls:
// a 4 MiB tmpfs mounted as the managed root (needs CAP_SYS_ADMIN; the test is skipped, saying
// so, when mount(2) is refused).

import AssetStoreTestSupport
import Foundation
import Glibc
import Synchronization
import Testing

@testable import AssetStore

private let mib = 1 << 20

/// Mounts a tmpfs of `size` bytes on `path`; false if this process may not.
private func mountTmpfs(_ path: String, size: Int) -> Bool {
    mount("tmpfs", path, "tmpfs", 0, "size=\(size)") == 0
}

private let canMount: Bool = {
    let dir = NSTemporaryDirectory() + "assetd-mount-probe-minfree-\(getpid())"
    try? FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    defer { rmdir(dir) }
    guard mountTmpfs(dir, size: mib) else { return false }
    umount(dir)
    return true
}()

@Suite("min_free", .enabled(if: canMount, "mounting a tmpfs needs CAP_SYS_ADMIN"))
struct MinFreeTests {
    @Test("below min_free, least recently used files on that filesystem go until it is free again")
    func evictsUntilFree() throws {
        let f = try Fixture()
        #expect(mountTmpfs(f.root, size: 4 * mib))
        defer { umount2(f.root, Int32(MNT_DETACH)) }
        for i in 0..<3 {
            try f.put([(ref("c", "k\(i)"), ["file": .string(try f.makeFile("f\(i)", size: mib))])])
            f.clock.advance(1)
        }
        f.clock.advance(3600)
        // 3 MiB used of 4: 1 MiB free. Wanting 2.5 MiB free takes two files.
        var p = PolicyConfiguration()
        p.minFree = Int64(2 * mib + mib / 2)
        f.store.policy = p
        let plan = try f.store.enforce()
        #expect(plan.objects.map(\.ref.key) == ["k0", "k1"])
        #expect(plan.objects.allSatisfy { $0.reason == .minFree })
        // Queued but not yet unlinked bytes count as freed: a second run does nothing.
        #expect(try f.store.enforce().objects.isEmpty)
        _ = try f.store.sweep()
        #expect(!f.exists(f.root + "/f0") && !f.exists(f.root + "/f1") && f.exists(f.root + "/f2"))
        #expect(try f.store.enforce().objects.isEmpty)
    }

    @Test("files on another root's filesystem are not evicted for this one's space")
    func otherFilesystemUntouched() throws {
        let f = try Fixture { $0.roots.append($0.roots[0] + "/small") }
        let small = f.root + "/small"
        try FileManager.default.createDirectory(atPath: small, withIntermediateDirectories: true)
        #expect(mountTmpfs(small, size: 4 * mib))
        defer { umount2(small, Int32(MNT_DETACH)) }
        // The least recently used object lives on the test machine's disk, which has room.
        try f.put([(ref("c", "disk"), ["file": .string(try f.makeFile("big", size: mib))])])
        for i in 0..<3 {
            f.clock.advance(1)
            try f.put([(ref("c", "k\(i)"), ["file": .string(try f.makeFile("small/f\(i)", size: mib))])])
        }
        f.clock.advance(3600)
        var p = PolicyConfiguration()
        p.minFree = Int64(2 * mib + mib / 2)
        f.store.policy = p
        #expect(try f.store.enforce().objects.map(\.ref.key) == ["k0", "k1"])
        #expect(try f.exists(ref("c", "disk")))
    }

    @Test("queued bytes the next sweep will not free (a lease defers them) do not count as freed")
    func deferredBytesNotFreed() throws {
        let f = try Fixture()
        #expect(mountTmpfs(f.root, size: 4 * mib))
        defer { umount2(f.root, Int32(MNT_DETACH)) }
        var paths = [String]()
        for i in 0..<3 {
            paths.append(try f.makeFile("f\(i)", size: mib))
            try f.put([(ref("c", "k\(i)"), ["file": .string(paths[i])])])
            f.clock.advance(1)
        }
        f.clock.advance(3600)
        // k0 deleted while its file is leased: queued, and the sweep defers it.
        _ = try f.store.leases.acquire(objects: [], files: [paths[0]], ttl: 600)
        try f.delete(ref("c", "k0"))
        #expect(try f.store.sweep().deferred.map(\.path) == [paths[0]])
        // 1 MiB free of 4, 2.5 wanted: f0's queued MiB stays, so both other files must go.
        var p = PolicyConfiguration()
        p.minFree = Int64(2 * mib + mib / 2)
        f.store.policy = p
        #expect(try f.store.enforce().objects.map(\.ref.key) == ["k1", "k2"])
    }

    @Test("a file queued under two names counts once toward what the sweep will free")
    func queuedNamesCountOnce() throws {
        let f = try Fixture()
        #expect(mountTmpfs(f.root, size: 4 * mib))
        defer { umount2(f.root, Int32(MNT_DETACH)) }
        let a = try f.makeFile("a", size: mib)
        #expect(link(a, f.root + "/a2") == 0)
        try f.put([(ref("c", "a"), ["file": .string(a)]), (ref("c", "a2"), ["file": .string(f.root + "/a2")])])
        for i in 0..<2 {
            f.clock.advance(1)
            try f.put([(ref("c", "k\(i)"), ["file": .string(try f.makeFile("f\(i)", size: mib))])])
        }
        f.clock.advance(3600)
        try f.delete(ref("c", "a"), ref("c", "a2"))  // both names queued: 1 MiB, not 2
        // 1 MiB free of 4, 2.5 wanted, 1 MiB queued: k0's file must go too.
        var p = PolicyConfiguration()
        p.minFree = Int64(2 * mib + mib / 2)
        f.store.policy = p
        #expect(try f.store.enforce().objects.map(\.ref.key) == ["k0"])
    }

    /// How many times the writer counts the whole unlink queue while `body` runs.
    private func wholeCounts(_ f: Fixture, _ body: () throws -> Void) throws -> Int {
        let n = Mutex(0)
        try f.store.write { tx in
            tx.db.trace(options: .statement) { e in
                let sql = e.description
                if sql.contains("MAX(size) AS s FROM unlink_queue") && !sql.contains("id <=") { n.withLock { $0 += 1 } }
            }
        }
        defer { _ = try? f.store.write { tx in tx.db.trace(options: .statement, nil) } }
        try body()
        return n.withLock { $0 }
    }

    @Test("a run of many batches counts the whole queue at its first and before it ends, not at each")
    func queueCountedOnce() throws {
        let f = try Fixture { $0.unlinkDelay = 3600 }  // nothing unlinked beside the run
        #expect(mountTmpfs(f.root, size: 4 * mib))
        defer { umount2(f.root, Int32(MNT_DETACH)) }
        for i in 0..<12 {
            try f.put([(ref("c", "k\(i)"), ["file": .string(try f.makeFile("f\(i)", size: mib / 4))])])
            f.clock.advance(1)
        }
        f.clock.advance(3600)
        // 3 MiB used of 4, 2 7/8 wanted free: eight files of a quarter, one a batch.
        var p = PolicyConfiguration()
        p.minFree = Int64(3 * mib - mib / 8)
        p.batch = 1
        f.store.policy = p
        var plan: PolicyPlan?
        let counts = try wholeCounts(f) { plan = try f.store.enforce() }
        #expect(plan?.objects.map(\.ref.key) == (0..<8).map { "k\($0)" })
        #expect(plan?.commits.count == 8)
        #expect(counts == 2)
        #expect(try f.store.enforce().objects.isEmpty)
    }

    @Test("a file whose two names one eviction queued counts once before the step ends")
    func recountBeforeEnd() throws {
        // Nothing unlinked beside the run: a's names unlinked during batch 2's free-space read
        // counted as free and as queued, and the step ended at a alone (rarely).
        let f = try Fixture { $0.unlinkDelay = 3600 }
        #expect(mountTmpfs(f.root, size: 4 * mib))
        defer { umount2(f.root, Int32(MNT_DETACH)) }
        let a = try f.makeFile("a", size: mib)
        #expect(link(a, f.root + "/a2") == 0)
        try f.put([(ref("c", "a"), ["file": [.string(a), .string(f.root + "/a2")]])])
        for i in 0..<2 {
            f.clock.advance(1)
            try f.put([(ref("c", "k\(i)"), ["file": .string(try f.makeFile("f\(i)", size: mib))])])
        }
        f.clock.advance(3600)
        // 1 MiB free of 4, 2.5 wanted: evicting a frees 1 MiB, not the 2 its names count down.
        var p = PolicyConfiguration()
        p.minFree = Int64(2 * mib + mib / 2)
        f.store.policy = p
        #expect(try f.store.enforce().objects.map(\.ref.key) == ["a", "k0"])
    }

    /// The objects that hold no file on the filesystem short of space are looked at and
    /// charged as the walk passes over them: a one-batch dry run stops at the budget, a real
    /// run goes on over several transactions. SQLite passed over them inside one query.
    @Test("objects with no file on that filesystem are charged as they are passed over")
    func otherObjectsCharged() throws {
        let f = try Fixture()
        #expect(mountTmpfs(f.root, size: 4 * mib))
        defer { umount2(f.root, Int32(MNT_DETACH)) }
        try f.store.write { tx in
            for i in 0..<300 { try tx.put(ref("v", "v\(i)"), value: ["n": .int(Int64(i))]) }
        }
        for i in 0..<3 {
            f.clock.advance(1)
            try f.put([(ref("c", "k\(i)"), ["file": .string(try f.makeFile("f\(i)", size: mib))])])
        }
        f.clock.advance(3600)
        var p = PolicyConfiguration()
        p.minFree = Int64(2 * mib + mib / 2)
        p.batch = 5  // a budget of 50
        f.store.policy = p
        let one = try f.store.enforce(dryRun: true, dryRunBatches: 1)
        #expect(one.truncated && one.objects.isEmpty, "\(one.objects.map(\.ref.key))")
        let transactions = Mutex(0)
        let plan = try f.store.enforce { _ in transactions.withLock { $0 += 1 } }
        #expect(plan.objects.map(\.ref.key) == ["k0", "k1"])
        #expect(transactions.withLock { $0 } >= 6)  // 300 rows passed over, 50 a transaction
    }
}
