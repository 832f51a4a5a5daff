// Bounds on what a client's clause may cost (SPEC §8 I6): a runaway query is stopped after
// the configured time, refused as query_rejected, and the connection keeps working.

import Testing
import AssetStore
import AssetStoreTestSupport

@Suite struct QueryLimitTests {
    @Test("a query running past queryTimeLimit is stopped with query_rejected and the next query works")
    func runawayQueryStopped() throws {
        let f = try Fixture { $0.queryTimeLimit = 0.2 }
        try f.store.write { tx in
            for i in 0..<2000 { try tx.put(ref("m", "k\(i)"), value: ["n": .int(Int64(i))]) }
        }
        let started = ContinuousClock.now
        let e = expectCode(.queryRejected) {
            try f.store.aggregate(function: "COUNT(*)", clause: ", index_default a, index_default b")
        }
        // The aggregate's clause must be WHERE…; a cross join through a subquery is the same cost.
        let e2 = expectCode(.queryRejected) {
            try f.store.query(clause: ", index_default a, index_default b WHERE a.size + b.size + index_default.size = -1")
        }
        #expect(e != nil)
        #expect(e2?.message.contains("longer than") == true, "\(String(describing: e2))")
        // Stopped by the configured 0.2 s, not the 30 s default: a bound on the limit in effect,
        // with room for any load, not on speed.
        #expect(ContinuousClock.now - started < .seconds(25))
        #expect(try f.store.aggregate(function: "COUNT(*)") == .value(2000))
    }

    @Test("an aggregate takes only a WHERE clause")
    func aggregateClauseIsWhere() throws {
        let f = try Fixture()
        for clause in ["ORDER BY size", "LIMIT 1", "GROUP BY owner", "WHEREVER"] {
            #expect(expectCode(.queryRejected) { try f.store.aggregate(function: "COUNT(*)", clause: clause) } != nil,
                    "\(clause)")
        }
        #expect(try f.store.aggregate(function: "COUNT(*)", clause: "  where size >= 0") == .value(0))
    }
}
