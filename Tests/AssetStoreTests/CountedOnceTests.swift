// The byte budget, quotas and `stats` count each file once, however many paths name it (hard
// links), and count what a file takes on disk where that is less than its length (a sparse
// file): otherwise one owner's links or sparse files would hold the total over budget whatever
// is evicted, and every run would evict every other owner's objects.

import AssetStoreTestSupport
import CFileIdentity
import Foundation
import GRDB
import Testing

@testable import AssetStore

@Suite("Bytes counted once per file")
struct CountedOnceTests {
    static let mib = 1 << 20

    /// Bob's older 1 MiB object; Eve's 1 MiB file under 20 names, in 20 pinned objects.
    private func linked(_ configure: (inout PolicyConfiguration) -> Void) throws -> Fixture {
        let f = try Fixture {
            var p = PolicyConfiguration()
            p.maxBytes = 10 * Int64(Self.mib)
            p.minAge = 0
            p.order = .lru
            configure(&p)
            $0.policy = p
        }
        let bob = try f.makeFile("bob.bin", size: Self.mib)
        try f.put([(ref("c", "bob"), ["file": .string(bob)])], owner: "bob")
        f.clock.advance(1)
        let eve = try f.makeFile("eve/0.bin", size: Self.mib)
        for i in 0..<20 {
            let path = f.root + "/eve/\(i).bin"
            if i > 0 { #expect(link(eve, path) == 0) }
            try f.put([(ref("c", "eve\(i)"), ["file": .string(path)])], owner: "eve")
            try f.store.write { tx in try tx.pin(ref("c", "eve\(i)")) }
        }
        f.clock.advance(1)
        return f
    }

    @Test("hard links of one file count once toward the budget")
    func budgetCountsLinksOnce() throws {
        let f = try linked { _ in }
        let plan = try f.store.enforce()
        #expect(plan.objects.isEmpty)
        #expect(try f.exists(ref("c", "bob")))
    }

    @Test("hard links of one file count once toward their owner's quota")
    func quotaCountsLinksOnce() throws {
        let f = try linked { $0.quotas = [.init(owner: "eve", maxBytes: 2 * Int64(Self.mib))] }
        try f.store.write { tx in for i in 0..<20 { try tx.pin(ref("c", "eve\(i)"), false) } }
        #expect(try f.store.enforce().objects.isEmpty)
    }

    @Test("stats counts hard links of one file once")
    func statisticsCountLinksOnce() throws {
        let f = try linked { _ in }
        let s = try f.store.statistics()
        #expect(s.files == 21)
        #expect(s.bytes == 2 * Int64(Self.mib))
        #expect(s.bytesPerOwner["eve"] == Int64(Self.mib))
    }

    @Test("a sparse file counts what it takes on disk")
    func sparseCountsAllocated() throws {
        let f = try Fixture()
        let path = f.root + "/sparse"
        let fd = open(path, O_CREAT | O_WRONLY, 0o644)
        #expect(fd >= 0 && ftruncate(fd, 1 << 40) == 0)
        close(fd)
        try f.put([(ref("c", "s"), ["file": .string(path)])])
        let size = try f.store.read { r in try Int64.fetchOne(r.db, sql: "SELECT size FROM file") }
        #expect(size == 0)
        let dense = try f.makeFile("dense", size: 5000)  // blocks round up: the length counts
        try f.put([(ref("c", "d"), ["file": .string(dense)])])
        #expect(try f.store.read { try $0.get(ref("c", "d"))?.files.first?.size } == 5000)
        #expect(assetd_counted_size(5000, 1, 16) == 5000)
        #expect(assetd_counted_size(1 << 40, 1, 8) == 4096)
        #expect(assetd_counted_size(1 << 40, 0, 0) == 1 << 40)  // no block count: the length
    }
}
