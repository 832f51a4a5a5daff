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

    @Test("with durability normal, commits are durable only after the sweep's sync")
    func normalWaitsForSync() throws {
        let f = try Fixture { $0.durability = .normal }
        let commit = try f.put([(ref("c", "k"), 1)]).commit
        #expect(f.store.durableCommit < commit)
        _ = try f.store.sweep()
        #expect(f.store.durableCommit == commit)
    }
}
