// Every commit of a policy run is in its plan, also a batch's that deleted nothing and only
// recorded the unlinks done beside it: the daemon notes the plan's commits (ping's last commit
// moves to it), and a run failing in a later batch still reports those unlinks.

import Foundation
import GRDB
import Synchronization
import Testing
import AssetStore
import AssetStoreTestSupport

@Suite("The commits of a policy run")
struct PolicyCommitTests {
    @Test("a batch that only records unlinks done beside it is one of the run's commits")
    func sweptOnlyBatchIsACommit() throws {
        var p = PolicyConfiguration()
        p.batch = 10
        let f = try Fixture { $0.policy = p }
        var paths = [String]()
        for i in 0..<20 {
            paths.append(try f.makeFile("k\(i).bin"))
            try f.put([(ref("c", "k\(i)"), ["file": .string(paths[i])])])
        }
        f.clock.advance(3600)
        // Two full batches; the third finds nothing to delete and records batch 2's unlinks.
        let plan = try f.store.expire(collection: "c", olderThan: 60, idle: nil)
        #expect(plan.commits.map(\.deleted.count) == [10, 10, 0])
        #expect(plan.commits.last?.commit == (try f.store.read { try $0.lastCommit() }))
        #expect(plan.sweep?.unlinked == paths)
        #expect(try f.store.pending().isEmpty)
        for path in paths { #expect(!f.exists(path)) }
    }

    @Test("a run failing after a batch that only recorded unlinks reports them")
    func failureAfterSweptOnlyBatch() throws {
        var p = PolicyConfiguration()
        p.batch = 10
        p.ttls = ["a", "b", "c"].map { .init(collection: $0, maxAge: 60) }
        let f = try Fixture { $0.policy = p }
        let other = try f.makeFile("other.bin")
        try f.put([(ref("x", "o"), ["file": .string(other)])])
        try f.put([(ref("c", "k"), ["file": .string(try f.makeFile("k.bin"))])])
        f.clock.advance(3600)
        // Deleting c/k fails (as a full disk or an I/O error would).
        let q = try DatabaseQueue(path: f.dbPath)
        try q.write { db in
            try db.execute(
                sql: """
                    CREATE TRIGGER boom BEFORE DELETE ON object WHEN old.collection = 'c'
                    BEGIN SELECT RAISE(ABORT, 'boom'); END
                    """)
        }
        try q.close()
        // After the first step's batch (nothing in `a`), a client deletes x/o; the second
        // step's batch (nothing in `b`) unlinks its file beside it and commits; the third fails.
        let store = f.store!
        let deleted = Mutex(false)
        do {
            _ = try store.enforce(progress: { _ in
                let first = deleted.withLock { d in
                    defer { d = true }
                    return !d
                }
                guard first else { return }
                _ = try? store.write { tx in try tx.delete(ref("x", "o")) }
            })
            Issue.record("the run should have failed")
        } catch let failure as PolicyRunFailure {
            #expect(failure.completed.commits.map(\.deleted.count) == [0])
            #expect(failure.completed.sweep?.unlinked == [other])
        }
        #expect(deleted.withLock { $0 })
        #expect(!f.exists(other))
        #expect(try f.store.pending().isEmpty)
        #expect(try f.exists(ref("c", "k")))
    }
}
