// A query's compiled statement is kept on its connection and used again for the same text
// (IndexQuery.swift): each use binds its own parameters, a redefined index is compiled
// again by SQLite under the same authorizer, and the cache's bound does not lose queries.

import Testing
@testable import AssetStore
import AssetStoreTestSupport

@Suite struct CompiledQueryTests {
    static let media = IndexDefinition(
        name: "media", version: "1", columns: [column("duration", .real, "duration"), column("kind", .text, "kind")])

    static func populated() throws -> Fixture {
        let f = try Fixture { $0.indexes = [media] }
        try f.store.write { tx in
            for i in 0..<10 {
                try tx.put(
                    ref("m", "k\(i)"), value: ["duration": .double(Double(i)), "kind": i % 2 == 0 ? "even" : "odd"],
                    owner: i < 5 ? "alice" : "bob")
            }
        }
        return f
    }

    @Test("the same text asked again with other parameters answers for those parameters")
    func parametersRebound() throws {
        let f = try Self.populated()
        for _ in 0..<3 {
            #expect(try f.store.query(clause: "WHERE owner = ? ORDER BY key", parameters: ["alice"]).count == 5)
            #expect(try f.store.query(clause: "WHERE owner = ? ORDER BY key", parameters: ["nobody"]).isEmpty)
            #expect(
                try f.store.aggregate(function: "COUNT(*)", clause: "WHERE owner = ?", parameters: ["bob"]) == .value(5)
            )
            #expect(try f.store.query(index: "media", clause: "WHERE duration >= ?", parameters: [7]).count == 3)
            #expect(try f.store.query(index: "media", clause: "WHERE duration >= ?", parameters: [9]).count == 1)
        }
    }

    @Test("a query kept from before an index was redefined follows the new definition")
    func redefinedIndex() throws {
        let f = try Self.populated()
        #expect(try f.store.query(index: "media", clause: "WHERE duration > 7").count == 2)
        #expect(try f.store.query(index: "media", clause: "WHERE kind = 'odd'", include: .rows).count == 5)
        let kindOnly = IndexDefinition(name: "media", version: "2", columns: [column("kind", .text, "kind")])
        try f.store.write { tx in try tx.defineIndex(kindOnly) }
        #expect(try f.store.read { try $0.indexes() }.first { $0.name == "media" } == kindOnly)
        _ = expectCode(.queryRejected) { try f.store.query(index: "media", clause: "WHERE duration > 7") }
        let rows = try f.store.query(index: "media", clause: "WHERE kind = 'odd'", include: .rows)
        #expect(rows.count == 5 && rows.allSatisfy { $0.columns?.keys.sorted() == ["kind"] }, "\(rows)")
        try f.store.write { tx in try tx.defineIndex(Self.media) }
        #expect(try f.store.query(index: "media", clause: "WHERE duration > 7").count == 2)
    }

    @Test("more distinct queries than a connection keeps all answer, and a refused one stays refused")
    func beyondTheBound() throws {
        let f = try Self.populated()
        for round in 0..<2 {
            for i in 0..<(KeptStatements.countLimit * 2) {
                let n = try f.store.aggregate(function: "COUNT(*)", clause: "WHERE size >= 0 AND \(i) >= 0")
                #expect(n == .value(10), "round \(round), query \(i)")
            }
            _ = expectCode(.queryRejected) { try f.store.query(clause: "WHERE key IN (SELECT key FROM object)") }
        }
    }

    @Test("a query asked before a full cache was emptied, asked again after, answers for itself")
    func lastAfterEmptied() throws {
        let f = try Self.populated()
        let a = "WHERE owner = 'alice' ORDER BY key"
        #expect(try f.store.query(clause: a).count == 5)
        for i in 0..<KeptStatements.countLimit {
            #expect(try f.store.query(clause: "WHERE owner = 'bob' AND \(i) >= 0").count == 5)
        }
        #expect(try f.store.query(clause: a).map(\.ref.key) == (0..<5).map { "k\($0)" })
    }

    @Test("clauses equal as Strings but not in bytes ('é' composed and decomposed) each find their own rows")
    func canonicallyEquivalentClauses() throws {
        let f = try Self.populated()
        let composed = "\u{E9}", decomposed = "e\u{301}"
        #expect(composed == decomposed && Array(composed.utf8) != Array(decomposed.utf8))
        try f.store.write { tx in
            try tx.put(ref("m", composed), value: ["kind": .string(composed)])
            try tx.put(ref("m", decomposed), value: ["kind": .string(decomposed)])
        }
        for _ in 0..<2 {
            for key in [composed, decomposed, composed] {
                let rows = try f.store.query(clause: "WHERE key = '\(key)'")
                #expect(rows.map { Array($0.ref.key.utf8) } == [Array(key.utf8)], "\(Array(key.utf8))")
                let n = try f.store.aggregate(
                    function: "MAX(length(CAST(key AS BLOB)))", clause: "WHERE key = '\(key)'")
                #expect(n == .value(.int(Int64(key.utf8.count))), "\(Array(key.utf8))")
                let kinds = try f.store.query(index: "media", clause: "WHERE kind = '\(key)'")
                #expect(kinds.map { Array($0.ref.key.utf8) } == [Array(key.utf8)], "\(Array(key.utf8))")
            }
        }
    }
}
