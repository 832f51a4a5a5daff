// The byte budget, quotas and `stats` count each file once, however many paths name it (hard
// links, a name renamed and named again): otherwise one owner's names of one file would hold
// the total over budget whatever is evicted, and every run would evict every other owner's
// objects.

import AssetStoreTestSupport
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

    @Test(
        "a store between the low-water mark and the budget is left alone, and the run ends",
        arguments: [EvictionOrder.lru, .s3fifo])
    func betweenLowWaterAndBudget(order: EvictionOrder) throws {
        let f = try Fixture {
            var p = PolicyConfiguration()
            p.maxBytes = 10 * Int64(Self.mib)  // low water 0.9: the target is 9 MiB
            p.minAge = 0
            p.order = order
            $0.policy = p
        }
        for i in 0..<19 {
            let path = try f.makeFile("f\(i)", size: Self.mib / 2)
            try f.put([(ref("c", "o\(i)"), ["file": .string(path)])])
        }
        f.clock.advance(1)
        // 9.5 MiB: under the budget, over its target. A run that asked the exact count of the
        // target here went on batch after batch, deleting nothing, for ever.
        let plan = try f.store.enforce(dryRun: true, dryRunBatches: 5)
        try #require(!plan.truncated)  // else the real run below would not end
        #expect(plan.objects.isEmpty)
        #expect(try f.store.enforce().objects.isEmpty)
    }

    @Test("a name renamed away and the new name registered count as one file")
    func renamedAndRegisteredAgain() throws {
        let f = try Fixture()
        var path = try f.makeFile("n0", size: Self.mib)
        for i in 0..<5 {
            try f.put([(ref("c", "o\(i)"), ["file": .string(path)])], owner: "eve")
            let next = f.root + "/n\(i + 1)"
            #expect(rename(path, next) == 0)
            path = next
        }
        let s = try f.store.statistics()
        #expect(s.files == 5)
        #expect(s.bytes == Int64(Self.mib))
        #expect(s.bytesPerOwner["eve"] == Int64(Self.mib))
        #expect(try f.store.read { try QuotaStep.usage(of: "eve", $0.db) } == Int64(Self.mib))
    }

    @Test("the list of shared files follows the rows: listed as names come, dropped once alone")
    func sharedFollowsRows() throws {
        let f = try linked { _ in }
        let listed = { try f.store.read { try Int.fetchOne($0.db, sql: "SELECT COUNT(*) FROM file_shared") } }
        let bytes = { try f.store.statistics().bytes }
        #expect(try listed() == 1)
        try f.store.write { tx in for i in 0..<20 { try tx.pin(ref("c", "eve\(i)"), false) } }
        for i in 1..<19 { _ = try f.delete(ref("c", "eve\(i)")) }
        #expect(try listed() == 1)  // two rows left
        _ = try f.delete(ref("c", "eve19"))
        #expect(try bytes() == 2 * Int64(Self.mib))
        #expect(try listed() == 0)  // one row left: the delete's commit dropped it
        // An entry left with one row (by an earlier version) counts nothing; a real run drops it.
        try f.store.write { tx in
            try tx.db.execute(
                sql: "INSERT INTO file_shared SELECT inode, device FROM file WHERE path LIKE '%/eve/0.bin'")
        }
        #expect(try listed() == 1)
        _ = try f.store.enforce(dryRun: true)
        #expect(try listed() == 1)
        _ = try f.store.enforce()
        #expect(try listed() == 0)
        // A name of the file registered again (the sweep has not unlinked the others yet).
        let again = f.root + "/eve/again.bin"
        #expect(link(f.root + "/eve/0.bin", again) == 0)
        try f.put([(ref("c", "again"), ["file": .string(again)])], owner: "eve")
        #expect(try listed() == 1)
        #expect(try bytes() == 2 * Int64(Self.mib))
    }

    @Test("a registered name that becomes another name of a registered file counts once")
    func nameTurnedLink() throws {
        let f = try Fixture()
        let a = try f.makeFile("a", size: Self.mib)
        let b = try f.makeFile("b", size: Self.mib / 2)
        try f.put([(ref("c", "a"), ["file": .string(a)]), (ref("c", "b"), ["file": .string(b)])])
        #expect(unlink(b) == 0 && link(a, b) == 0)
        try f.put([(ref("c", "b"), ["file": .string(b), "v": .string("2")])])  // the row of b, seen again
        #expect(try f.store.statistics().bytes == Int64(Self.mib))
    }

    /// Eve's 1 MiB file under `names` names, her oldest objects, evictable; then Bob's newer files.
    private func evictableNames(
        _ names: Int, bob: Int, _ configure: (inout PolicyConfiguration) -> Void
    ) throws
        -> Fixture
    {
        let f = try Fixture {
            var p = PolicyConfiguration()
            p.minAge = 0
            p.order = .lru
            configure(&p)
            $0.policy = p
        }
        let eve = try f.makeFile("eve/0.bin", size: Self.mib)
        for i in 0..<names {
            let path = f.root + "/eve/\(i).bin"
            if i > 0 { #expect(link(eve, path) == 0) }
            try f.put([(ref("c", "eve\(i)"), ["file": .string(path)])], owner: "eve")
        }
        f.clock.advance(1)
        for i in 0..<bob {
            let path = try f.makeFile("bob/\(i).bin", size: Self.mib)
            try f.put([(ref("c", "bob\(i)"), ["file": .string(path)])], owner: "bob")
            f.clock.advance(1)
        }
        return f
    }

    @Test("a name whose file other names keep frees nothing: the budget goes on to the file's last name and past")
    func budgetFreesFileOnce() throws {
        let f = try evictableNames(20, bob: 10) { $0.maxBytes = 10 * Int64(Self.mib) }  // 11 MiB, target 9
        let plan = try f.store.enforce()
        #expect(plan.objects.count == 21)
        #expect(plan.commits.count == 1)
        for i in 0..<20 { #expect(try !f.exists(ref("c", "eve\(i)"))) }
        #expect(try !f.exists(ref("c", "bob0")))
        #expect(try f.exists(ref("c", "bob1")))
    }

    @Test("a quota is not met by evicting one of many names of a file its owner still holds")
    func quotaFreesFileOnce() throws {
        let f = try evictableNames(10, bob: 0) { $0.quotas = [.init(owner: "eve", maxBytes: Int64(Self.mib) / 2)] }
        _ = try f.store.enforce()
        #expect(try f.store.read { try QuotaStep.usage(of: "eve", $0.db) } == 0)
        for i in 0..<10 { #expect(try !f.exists(ref("c", "eve\(i)"))) }
    }

    @Test("a quota is not met by one object holding many names of a file: usage is counted again")
    func quotaCountsAgainAfterManyNames() throws {
        let f = try Fixture {
            var p = PolicyConfiguration()
            p.minAge = 0
            p.order = .lru
            p.quotas = [.init(owner: "eve", maxBytes: 2 * Int64(Self.mib))]
            $0.policy = p
        }
        let file = try f.makeFile("eve/0.bin", size: Self.mib)
        try f.put([(ref("c", "links"), ["v": .string("")])], owner: "eve")
        try f.store.write { tx in
            for i in 0..<10 {
                let path = f.root + "/eve/\(i).bin"
                if i > 0 { #expect(link(file, path) == 0) }
                try tx.addEdge(
                    name: "l\(i)", source: ref("c", "links"), destination: .file(path),
                    rules: [.deleteDestinationIfAllSourcesDeleted])
            }
        }
        f.clock.advance(1)
        for i in 0..<3 {
            let path = try f.makeFile("eve/own\(i).bin", size: Self.mib)
            try f.put([(ref("c", "own\(i)"), ["file": .string(path)])], owner: "eve")
            f.clock.advance(1)
        }
        #expect(try f.store.read { try QuotaStep.usage(of: "eve", $0.db) } == 4 * Int64(Self.mib))
        _ = try f.store.enforce()
        // The ten names went in one eviction, counted as 10 MiB where 1 MiB was freed.
        #expect(try f.store.read { try QuotaStep.usage(of: "eve", $0.db) } <= 2 * Int64(Self.mib))
        #expect(try !f.exists(ref("c", "own0")))
    }

    @Test("the bytes a lease keeps count names of one file once, as the quota does")
    func leasedBytesCountLinksOnce() throws {
        let f = try Fixture()
        let a = try f.makeFile("eve/a.bin", size: Self.mib)
        let b = f.root + "/eve/b.bin"
        #expect(link(a, b) == 0)
        try f.put([(ref("c", "both"), ["v": .string("")])], owner: "eve")
        try f.store.write { tx in
            for (i, path) in [a, b].enumerated() {
                try tx.addEdge(
                    name: "l\(i)", source: ref("c", "both"), destination: .file(path),
                    rules: [.deleteDestinationIfAllSourcesDeleted])
            }
        }
        let leased = try f.store.read { try $0.leasedBytes(owner: "eve", objects: [ref("c", "both")], files: []) }
        #expect(leased == Int64(Self.mib))
    }

    @Test("rows of one inode number with different birth times are different files, counted apart")
    func reusedInodeCountsApart() throws {
        let f = try Fixture()
        try f.store.write { tx in
            for (i, birth) in [1, 1, 2].enumerated() {
                try tx.db.execute(
                    sql: """
                        INSERT INTO file (path, size, device, inode, missing, first_seen, birth) VALUES (?, 1000, 7, 42, 0, 0, ?)
                        """,
                    arguments: ["\(f.root)/n\(i)", birth])
            }
            try tx.db.execute(sql: "INSERT INTO file_shared VALUES (42, 7)")
        }
        #expect(try f.store.statistics().bytes == 2000)
    }

    @Test("a store written before names were counted once counts them once after its upgrade")
    func upgradeFindsSharedNames() throws {
        let f = try Fixture()
        let pool = try MigrationTests.rebuild(f, as: "v10")
        try pool.write { db in
            for i in 0..<3 {
                try db.execute(
                    sql: """
                        INSERT INTO file (path, size, device, inode, missing, first_seen) VALUES (?, 1000, 7, 42, 0, 0)
                        """,
                    arguments: ["\(f.root)/n\(i)"])
            }
        }
        try pool.close()
        try f.reopen(drain: false)
        #expect(try f.store.statistics().bytes == 1000)
    }
}
