// The policy planner's candidate queries walk an index in the order they need (LRU, age)
// and never sort a whole collection or owner: a run over a million objects must not
// re-sort them for every batch.

@testable import AssetStore
import AssetStoreTestSupport
import GRDB
import Testing

@Suite("Policy candidate query plans")
struct PolicyQueryPlanTests {
    struct Shape: Sendable, CustomTestStringConvertible {
        var order: String
        var condition: String
        var arguments: [String]
        /// Read for each row, not a clause: rows it leaves out come back too (a collection's
        /// expiry, a filesystem's min_free).
        var filter = ""
        var filterArguments: [String] = []
        /// One owner's LRU order: the per-owner index exists while a quota is configured.
        var quota = false
        /// From the start of the order, or after a cursor.
        var cursor = true
        var testDescription: String { "\(order) \(condition) \(filter)\(cursor ? "" : " from the start")" }
    }

    static let shapes: [Shape] = [
        Shape(order: "created", condition: "d.created < ?", arguments: ["1"]),
        Shape(
            order: "created", condition: "d.created < ?", arguments: ["1"], filter: "d.collection = ?",
            filterArguments: ["c"]),
        Shape(
            order: "accessed", condition: "d.accessed < ?", arguments: ["1"], filter: "d.collection = ?",
            filterArguments: ["c"]),
        Shape(order: "accessed", condition: "", arguments: []),
        Shape(order: "accessed", condition: "", arguments: [], cursor: false),
        Shape(
            order: "accessed", condition: "", arguments: [],
            filter: MinFreeStep(device: 1, minFree: 1).filter.0, filterArguments: ["1"]),
        Shape(order: "accessed", condition: "d.owner = ?", arguments: ["alice"], quota: true),
        Shape(order: "accessed", condition: "d.owner = ?", arguments: ["alice"], quota: true, cursor: false),
    ]

    @Test("candidates come from an index in order, with no sort", arguments: shapes)
    func inOrder(_ s: Shape) throws {
        let f = try Fixture { c in
            if s.quota { c.policy = PolicyConfiguration(); c.policy?.quotas = [.init(owner: "alice", maxBytes: 1)] }
        }
        for i in 0..<200 {
            try f.put(
                [(ref(i % 2 == 0 ? "c" : "d", "k\(i)"), ["n": .int(Int64(i))])], owner: i % 3 == 0 ? "alice" : "bob")
        }
        // After a cursor: the rest of its key's run, a seek on the id, then the keys after it.
        for sameKey in s.cursor ? [true, false] : [false] {
            let (sql, args) = PolicyRun.candidateQuery(
                order: s.order, after: s.cursor ? (0, 0) : nil, sameKey: sameKey, condition: s.condition,
                arguments: StatementArguments(s.arguments), filter: s.filter,
                filterArguments: StatementArguments(s.filterArguments), limit: 10)
            let plan = try f.store.read { r in
                try Row.fetchAll(r.db, sql: "EXPLAIN QUERY PLAN " + sql, arguments: args).map { $0["detail"] as String }
            }
            #expect(!plan.contains { $0.contains("TEMP B-TREE") }, "\(plan)")
            #expect(plan.contains { $0.contains("USING INDEX index_default__") }, "\(plan)")
            if sameKey { #expect(plan.contains { $0.contains("rowid>?") }, "\(plan)") }
        }
    }

    /// The budget's total of every file, counted once: the short list of shared identities
    /// drives it, each looked up along `file_identity`. Left to choose without statistics,
    /// SQLite read every row of `file` (and its table row) to probe the list: 4.5 times the
    /// plain sum at 1,000,000 rows, at every batch of a run.
    @Test("the budget's total reads the shared list, then those files")
    func registeredTotal() throws {
        let f = try Fixture()
        let plan = try f.store.read { r in
            try Row.fetchAll(r.db, sql: "EXPLAIN QUERY PLAN " + Sizes.registered).map { $0["detail"] as String }
        }
        #expect(plan.contains("SCAN s"), "\(plan)")
        #expect(plan.contains { $0.hasPrefix("SEARCH f USING INDEX file_identity") }, "\(plan)")
        #expect(!plan.contains { $0.hasPrefix("SCAN f ") }, "\(plan)")
    }

    /// A `min_free` step's sum of the files on its file system, counted once: the shared list
    /// drives the excess there too, as in the budget's total.
    @Test("a min_free step's sum reads the shared list, then those files")
    func minFreeHeld() throws {
        let f = try Fixture()
        let plan = try f.store.read { r in
            try Row.fetchAll(
                r.db, sql: "EXPLAIN QUERY PLAN " + MinFreeStep.heldSQL("(?, ?)"), arguments: [1, 2, 1, 2]
            ).map { $0["detail"] as String }
        }
        #expect(plan.contains("SCAN s"), "\(plan)")
        #expect(plan.contains { $0.hasPrefix("SEARCH f USING INDEX file_identity") }, "\(plan)")
        #expect(!plan.contains { $0.hasPrefix("SEARCH s") }, "\(plan)")
    }

    /// A `min_free` step's later batches read what joined the queue since, not the queue.
    @Test("a min_free step's later counts search the queue by id and by next attempt")
    func minFreeQueuedSince() throws {
        let f = try Fixture()
        for (filter, index) in [
            (MinFreeQueue.queuedSince, "INTEGER PRIMARY KEY"), (MinFreeQueue.dueAgain, "INDEX unlink_queue_due"),
        ] {
            let sql = MinFreeQueue.sum(MinFreeQueue.due("(?)") + " AND " + filter)
            let plan = try f.store.read { r in
                try Row.fetchAll(r.db, sql: "EXPLAIN QUERY PLAN " + sql, arguments: [1, 0, "[]", 1, 0, 1])
                    .map { $0["detail"] as String }
            }
            #expect(plan.contains { $0.hasPrefix("SEARCH unlink_queue USING \(index)") }, "\(plan)")
            #expect(!plan.contains { $0.hasPrefix("SCAN unlink_queue") }, "\(plan)")
        }
    }

    /// After a step forward of the wall clock the later counts' window is still along next attempt.
    @Test("a min_free step's later counts after a step forward search the queue by next attempt")
    func minFreeSteppedDueAgain() throws {
        let f = try Fixture()
        let sql = MinFreeQueue.sum(MinFreeQueue.steppedDue("(?)") + " AND " + MinFreeQueue.steppedDueAgain)
        let plan = try f.store.read { r in
            try Row.fetchAll(
                r.db, sql: "EXPLAIN QUERY PLAN " + sql,
                arguments: [1, 0, "[]", 1, 0, 0, 9e15, 0, 1, 0, 0, 0, 0]
            ).map { $0["detail"] as String }
        }
        #expect(plan.contains { $0.hasPrefix("SEARCH unlink_queue USING INDEX unlink_queue_due") }, "\(plan)")
        #expect(!plan.contains { $0.hasPrefix("SCAN unlink_queue") }, "\(plan)")
    }
}
