// Durability settings reach the connection that commits (SPEC §7 store.durability, §4.2).

import GRDB
import Testing
@testable import AssetStore
import AssetStoreTestSupport

@Suite struct DurabilityTests {
    @Test("the writer commits with synchronous FULL or NORMAL as configured", arguments: [
        (StoreConfiguration.Durability.full, 2), (.normal, 1),
    ])
    func writerSynchronous(durability: StoreConfiguration.Durability, expected: Int) throws {
        let f = try Fixture { $0.durability = durability }
        let level = try f.store.write { tx in try Int.fetchOne(tx.db, sql: "PRAGMA synchronous") }.value
        #expect(level == expected)
        try f.reopen()
        #expect(try f.store.write { tx in try Int.fetchOne(tx.db, sql: "PRAGMA synchronous") }.value == expected)
    }

    @Test("with durability normal, a queued file is unlinked only after the sweep syncs its commit")
    func normalWaitsForSync() throws {
        let f = try Fixture { $0.durability = .normal }
        let path = try f.makeFile("n/file")
        try f.put([(ref("c", "k"), ["file": .string(path)])])
        let commit = try f.delete(ref("c", "k")).commit
        #expect(f.store.durableCommit < commit)
        #expect(f.exists(path))
        #expect(try f.store.sweep().unlinked == [path])
        #expect(f.store.durableCommit == commit)
        #expect(!f.exists(path))
    }

    @Test("a sweep with nothing due only reads: it syncs nothing and reports the queue")
    func idleSweepOnlyReads() throws {
        let f = try Fixture { c in
            c.durability = .normal
            c.unlinkDelay = 60
        }
        let path = try f.makeFile("n/later")
        try f.put([(ref("c", "k"), ["file": .string(path)])])
        let commit = try f.delete(ref("c", "k")).commit
        let report = try f.store.sweep()
        #expect(report.unlinked.isEmpty && report.pending == 1)
        #expect(f.store.durableCommit < commit)
        f.clock.advance(61)
        #expect(try f.store.sweep().unlinked == [path])
        #expect(f.store.durableCommit == commit)
    }
}
