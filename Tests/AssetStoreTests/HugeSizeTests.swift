// Sizes anyone can make absurd: a sparse file may claim up to 2^63-1 bytes, an object counts
// each of its files and a file held by two objects counts in each. No total of them may trap
// (an overflowing `+` stops the daemon) or fail SQLite's SUM (every policy run and `stats`
// would fail): totals saturate, and a recorded size is capped at 2^53.

import AssetStoreTestSupport
import Foundation
import GRDB
import Testing

@testable import AssetStore

@Suite("Absurd file sizes")
struct HugeSizeTests {
    private func fixture(order: EvictionOrder = .lru, quota: Bool = false, maxBytes: Int64 = 1000) throws -> Fixture {
        try Fixture {
            var p = PolicyConfiguration()
            p.maxBytes = maxBytes
            p.minAge = 0
            p.order = order
            if quota { p.quotas = [.init(owner: "eve", maxBytes: 1000)] }
            $0.policy = p
        }
    }

    /// Objects holding files whose recorded sizes are then made `size`, as an older store
    /// (or a filesystem allowing them) could hold them; `shared`: every object holds one file.
    /// Each is read once, so that S3-FIFO places it (a large one never read it would not).
    private func store(_ f: Fixture, objects: Int, size: Int64, shared: Bool) throws {
        for i in 0..<objects {
            f.clock.advance(1)
            let path = try f.makeFile(shared ? "big" : "big\(i)", size: 10)
            try f.put([(ref("c", "o\(i)"), ["file": .string(path)])], owner: "eve")
        }
        f.clock.advance(1)
        for i in 0..<objects { try f.store.touch(ref("c", "o\(i)")) }
        try f.store.flushAccesses()
        try f.store.write { tx in
            try tx.db.execute(sql: "UPDATE file SET size = ?", arguments: [size])
            try tx.db.execute(sql: "UPDATE object SET size = ?", arguments: [size])
        }
    }

    @Test("S3-FIFO places two objects of 6 EiB without trapping")
    func queuesSaturate() throws {
        // The first fits the queues, the second passes Int64.max with it.
        let f = try fixture(order: .s3fifo, maxBytes: 7 << 60)
        try store(f, objects: 2, size: 6 << 60, shared: false)
        let plan = try f.store.evict(bytes: 1, owner: nil, dryRun: true)
        #expect(plan.objects.map(\.ref.key) == ["o0"], "\(plan.json)")
        #expect(try f.store.evict(bytes: 1, owner: nil).objects.map(\.ref.key) == ["o0"])
    }

    @Test("S3-FIFO places two objects sharing a 6 EiB file without trapping")
    func queuesSaturateShared() throws {
        let f = try fixture(order: .s3fifo)
        try store(f, objects: 2, size: 6 << 60, shared: true)
        // Neither frees the file alone, so a byte target takes neither: but the run ends.
        #expect(try f.store.evict(bytes: 1, owner: nil, dryRun: true).objects.isEmpty)
        #expect(try f.store.enforce().objects.isEmpty)
    }

    @Test("a budget over files of 4 EiB each runs, quotas too")
    func budgetSumSaturates() throws {
        let f = try fixture(quota: true)
        try store(f, objects: 3, size: 4 << 60, shared: false)
        let plan = try f.store.enforce(dryRun: true)
        #expect(plan.objects.count == 3)
        #expect(plan.bytes == .max)
        #expect(try f.store.enforce().objects.count == 3)
        #expect(try f.store.statistics().counters["policy_bytes"] == .max)
    }

    @Test("stats saturates its byte totals")
    func statisticsSaturate() throws {
        let f = try fixture()
        try store(f, objects: 3, size: 4 << 60, shared: false)
        let s = try f.store.statistics()
        #expect(s.bytes == .max)
        #expect(s.bytesPerOwner["eve"] == .max)
    }

    @Test("a sparse file of 6 EiB is recorded at 2^53 bytes")
    func recordedSizeCapped() throws {
        guard Tmpfs.available else { return }  // only tmpfs takes such a size here
        let f = try fixture()
        #expect(Tmpfs.mount(f.root, mib: 1))
        defer { Tmpfs.unmount(f.root) }
        let path = f.root + "/sparse"
        let fd = open(path, O_CREAT | O_WRONLY, 0o644)
        #expect(fd >= 0 && ftruncate(fd, 6 << 60) == 0)
        close(fd)
        try f.put([(ref("c", "s"), ["file": .string(path)])])
        let size = try f.store.read { r in try Int64.fetchOne(r.db, sql: "SELECT size FROM file") }
        #expect(size == Sizes.maxFile)
    }

    @Test("saturating sums clamp at the bounds")
    func saturating() {
        #expect(Int64.max.adding(saturating: 1) == .max)
        #expect((Int64(6) << 60).adding(saturating: 6 << 60) == .max)
        #expect(Int64.min.subtracting(saturating: 1) == .min)
        #expect(Int64(5).subtracting(saturating: 7) == -2)
        #expect(Int64(-2).adding(saturating: .min) == .min)
    }
}
