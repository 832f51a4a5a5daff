// A set-based policy batch is judged before it changes anything, so it runs without a
// savepoint: a refused one writes nothing, an accepted one opens no savepoint, and one that
// fails half way leaves a transaction that can only roll back.

import Foundation
import GRDB
import Synchronization
import Testing

@testable import AssetStore
import AssetStoreTestSupport

@Suite struct BatchDeleteSavepointTests {
    /// Objects a0, a1 and l0 in `assets`, each holding its own file; l0's file is `leased`.
    private func store() throws -> (f: Fixture, leased: String) {
        let f = try Fixture { $0.setBasedPolicyDeletes = true }
        var leased = ""
        try f.store.write { tx in
            for key in ["a0", "a1", "l0"] {
                let path = try f.makeFile("d/\(key).bin", size: 10)
                if key == "l0" { leased = path }
                try tx.put(ref("assets", key), value: ["file": .string(path)])
            }
        }
        return (f, leased)
    }

    private func id(_ tx: WriteTransaction, _ key: String) throws -> Int64 {
        try Int64.fetchOne(tx.db, sql: "SELECT id FROM object WHERE key = ?", arguments: [key])!
    }

    @Test("a refused set-based batch writes nothing; an accepted one opens no savepoint")
    func noSavepoint() throws {
        let (f, leased) = try store()
        let statements = Mutex([String]())
        let g = EvictionGuard(oldEnough: AgeCutoff(before: .infinity), objects: [], files: [Array(leased.utf8)])
        try f.store.write { tx in
            tx.db.trace(options: .statement) { e in statements.withLock { $0.append(e.description) } }
            defer { tx.db.trace(options: .statement, nil) }
            var refusal: SkipReason?
            let refused = try tx.evict([try id(tx, "a0"), try id(tx, "l0")], guard: g, refusal: &refusal)
            #expect(refused == nil && refusal == .leased)
            #expect(tx.deletedIDs.isEmpty && tx.report.deleted.isEmpty && tx.queuedDetails.isEmpty)
            #expect(!statements.withLock { $0 }.contains { $0.contains("DELETE") || $0.contains("INSERT") })
            let effect = try tx.evict([try id(tx, "a0"), try id(tx, "a1")], guard: g)
            #expect(effect?.deleted.map(\.ref.key) == ["a0", "a1"])
            #expect(effect?.holders == [0, 1])
        }
        #expect(!statements.withLock { $0 }.contains { $0.uppercased().contains("SAVEPOINT") })
        let left = try f.store.read { r in try String.fetchAll(r.db, sql: "SELECT key FROM object ORDER BY key") }
        #expect(left == ["l0"])
    }

    @Test("a set-based batch that fails half way cannot commit what it did")
    func failureRollsBack() throws {
        let (f, _) = try store()
        let count = """
            SELECT (SELECT COUNT(*) FROM object) || ' ' || (SELECT COUNT(*) FROM edge) || ' '
                || (SELECT COUNT(*) FROM file) || ' ' || (SELECT COUNT(*) FROM unlink_queue)
            """
        let before = try f.store.read { r in try String.fetchOne(r.db, sql: count) }
        let g = EvictionGuard(oldEnough: AgeCutoff(before: .infinity), objects: [], files: [])
        let committed = Result {
            try f.store.write { tx in
                // A row said read in this transaction that is not there: the object DELETE
                // finds one row fewer, after the edges' DELETE ran, and throws.
                let a0 = try id(tx, "a0")
                let ghost = a0 + 1000
                let known = [
                    a0: DeletedDetail(id: a0, ref: ref("assets", "a0"), owner: "", pinned: false, created: 0),
                    ghost: DeletedDetail(id: ghost, ref: ref("assets", "ghost"), owner: "", pinned: false, created: 0),
                ]
                var refusal: SkipReason?
                #expect(throws: StoreError.self) {
                    try tx.evict([a0, ghost], guard: g, refusal: &refusal, known: known)
                }
                // Caught here, as a caller might: a later eviction (which would take the
                // worklist's savepoint) and committing must still fail.
                let a1 = try id(tx, "a1")
                #expect(throws: StoreError.self) { try tx.evict([a1], guard: g) }
            }
        }
        #expect(throws: StoreError.self) { try committed.get() }
        #expect(try f.store.read { r in try String.fetchOne(r.db, sql: count) } == before)
    }
}
