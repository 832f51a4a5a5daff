// Query plans: the common shapes use SQLite indexes, not scans. Checked with
// `Store.explain`, which returns SQLite's EXPLAIN QUERY PLAN lines; failures print them.

import GRDB
import Testing
import AssetStore
import AssetStoreTestSupport

@Suite struct QueryPlanTests {
    static func populated() throws -> Fixture {
        let f = try Fixture { c in
            c.indexes = [IndexDefinition(name: "media", version: "1", columns: [column("duration", .real, "duration")])]
        }
        try f.store.write { tx in
            for i in 0..<50 {
                var v: [String: JSONValue] = ["duration": .double(Double(i))]
                if i % 5 == 0 { v["file"] = .string(try f.makeFile("\(i).bin", size: i * 10)) }
                try tx.put(ref("m", "k\(i)"), value: .object(v), owner: ["alice", "bob", "carol"][i % 3])
            }
        }
        return f
    }

    /// True when some line searches or scans through an index (not a bare table scan).
    static func usesIndex(_ plan: [String], _ name: String? = nil) -> Bool {
        plan.contains { line in
            (line.contains("USING INDEX") || line.contains("USING COVERING INDEX"))
                && (name.map { line.contains($0) } ?? true)
        }
    }

    static func bareScan(_ plan: [String]) -> Bool {
        plan.contains { $0.hasPrefix("SCAN") && !$0.contains("USING") }
    }

    struct Shape: Sendable, CustomTestStringConvertible {
        var clause: String
        var parameters: [JSONValue]
        var index: String
        /// The ORDER BY must come from the index, not a sort.
        var ordered: Bool
        var testDescription: String { clause }
    }

    static let shapes: [Shape] = [
        Shape(
            clause: "WHERE owner = ? ORDER BY size DESC LIMIT 100", parameters: ["alice"],
            index: "index_default__owner_size", ordered: true),
        Shape(clause: "WHERE size > ?", parameters: [100], index: "index_default__size", ordered: false),
        Shape(clause: "ORDER BY accessed LIMIT 10", parameters: [], index: "index_default__accessed", ordered: true),
        Shape(clause: "WHERE owner = ?", parameters: ["bob"], index: "index_default__owner_size", ordered: false),
        Shape(clause: "ORDER BY size DESC LIMIT 100", parameters: [], index: "index_default__size", ordered: true),
    ]

    @Test("the common query shapes use an index, not a scan", arguments: shapes)
    func commonShapes(_ s: Shape) throws {
        let f = try Self.populated()
        let plan = try f.store.explain(clause: s.clause, parameters: s.parameters)
        let shown = plan.joined(separator: "\n")
        #expect(Self.usesIndex(plan, s.index), "plan for \(s.clause):\n\(shown)")
        #expect(!Self.bareScan(plan), "plan for \(s.clause):\n\(shown)")
        if s.ordered {
            #expect(!plan.contains { $0.contains("TEMP B-TREE") }, "sorted instead of read in order:\n\(shown)")
        }
        // The plan is for the query that runs: it answers.
        _ = try f.store.query(clause: s.clause, parameters: s.parameters)
    }

    @Test("one owner's largest objects, asked for as keys, read the owner index alone")
    func topBySizeKeysCovered() throws {
        let f = try Self.populated()
        let clause = "WHERE owner = ? ORDER BY size DESC LIMIT 100"
        // The columns query() selects for include = keys.
        let select = ["object_id", "collection", "key"].map { "\"index_default\".\"\($0)\"" }
            .joined(separator: ", ")
        let plan = try DatabaseQueue(path: f.dbPath).read { db in
            try Row.fetchAll(
                db, sql: "EXPLAIN QUERY PLAN SELECT \(select) FROM \"index_default\" \(clause)", arguments: ["alice"]
            )
            .map { $0["detail"] as String }
        }
        let shown = plan.joined(separator: "\n")
        #expect(plan.contains { $0.contains("USING COVERING INDEX index_default__owner_size") }, "\(shown)")
        #expect(!plan.contains { $0.contains("TEMP B-TREE") }, "\(shown)")
        #expect(try f.store.query(clause: clause, parameters: ["alice"]).count == 17)
    }

    @Test("with a quota configured, one owner's LRU order reads the per-owner LRU index")
    func ownerLRUWithQuota() throws {
        let f = try Fixture { c in
            c.policy = PolicyConfiguration()
            c.policy?.quotas = [.init(owner: "bob", maxBytes: 1 << 30)]
        }
        try f.store.write { tx in
            for i in 0..<30 { try tx.put(ref("m", "k\(i)"), value: .object([:]), owner: ["alice", "bob"][i % 2]) }
        }
        let plan = try f.store.explain(clause: "WHERE owner = ? ORDER BY accessed LIMIT 10", parameters: ["bob"])
        let shown = plan.joined(separator: "\n")
        #expect(Self.usesIndex(plan, "index_default__owner_accessed"), "\(shown)")
        #expect(!plan.contains { $0.contains("TEMP B-TREE") }, "sorted instead of read in order:\n\(shown)")
    }

    @Test("SUM(size) grouped by owner reads the owner index, covering")
    func aggregateByOwner() throws {
        let f = try Self.populated()
        let plan = try f.store.explain(clause: "", function: "SUM(size)", groupBy: ["owner"])
        let shown = plan.joined(separator: "\n")
        #expect(plan.contains { $0.contains("USING COVERING INDEX index_default__owner_size") }, "\(shown)")
        #expect(!plan.contains { $0.contains("TEMP B-TREE") }, "grouped with a sort:\n\(shown)")
        #expect(!Self.bareScan(plan), "\(shown)")
    }

    @Test("SUM(size) for one owner uses the owner index")
    func aggregateForOneOwner() throws {
        let f = try Self.populated()
        let plan = try f.store.explain(clause: "WHERE owner = ?", parameters: ["alice"], function: "SUM(size)")
        #expect(Self.usesIndex(plan, "index_default__owner_size"), "\(plan.joined(separator: "\n"))")
    }

    @Test("a user index column lookup uses that index's own SQLite index")
    func userIndexShape() throws {
        let f = try Self.populated()
        let plan = try f.store.explain(
            index: "media", clause: "WHERE duration > ? ORDER BY duration LIMIT 5", parameters: [10])
        let shown = plan.joined(separator: "\n")
        #expect(Self.usesIndex(plan, "index_media__c_duration"), "\(shown)")
        #expect(!Self.bareScan(plan), "\(shown)")
    }

    @Test("explain is held to the authorizer like the query it explains")
    func explainIsAuthorized() throws {
        let f = try Self.populated()
        #expect(
            expectCode(.queryRejected) { try f.store.explain(clause: "WHERE key IN (SELECT key FROM object)") } != nil)
        #expect(expectCode(.queryRejected) { try f.store.explain(clause: "WHERE 1; DELETE FROM object") } != nil)
        #expect(
            expectCode(.queryRejected) { try f.store.explain(clause: "", function: "(SELECT COUNT(*) FROM file)") }
                != nil)
        #expect(try f.store.read { try $0.objectCount() } == 50)
    }
}
