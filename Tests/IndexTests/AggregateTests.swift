// Aggregates (assetd(8), DATA MODEL, Secondary indexes): a function over the rows a WHERE clause
// with parameters matches, `{value}` without grouping, one row per group with `group_by`; unknown
// group columns are query_rejected.

import Testing
import AssetStore
import AssetStoreTestSupport

@Suite struct AggregateTests {
    static let media = IndexDefinition(
        name: "media", version: "1", columns: [column("duration", .real, "duration"), column("kind", .text, "kind")])

    /// alice: 100 + 300 (+ a 0-byte object), bob: 200, carol: 400.
    static func populated() throws -> Fixture {
        let f = try Fixture { $0.indexes = [media] }
        let objects: [(String, String, Int)] = [
            ("a", "alice", 100), ("b", "bob", 200), ("c", "alice", 300), ("d", "carol", 400), ("e", "alice", 0),
        ]
        try f.store.write { tx in
            for (k, owner, size) in objects {
                var v: [String: JSONValue] = [:]
                if size > 0 { v["file"] = .string(try f.makeFile("\(k).bin", size: size)) }
                try tx.put(ref("m", k), value: .object(v), owner: owner)
            }
            try tx.put(ref("v", "x"), value: ["duration": 10, "kind": "clip"], owner: "bob")
            try tx.put(ref("v", "y"), value: ["duration": 20.5, "kind": "clip"], owner: "bob")
            try tx.put(ref("v", "z"), value: ["duration": 60, "kind": "film"], owner: "bob")
        }
        return f
    }

    struct ValueCase: Sendable, CustomTestStringConvertible {
        var index = "default"
        var function: String
        var clause = ""
        var parameters: [JSONValue] = []
        var value: JSONValue
        var testDescription: String { "\(function) \(clause) \(parameters) = \(value)" }
    }

    static let valueCases: [ValueCase] = [
        ValueCase(function: "SUM(size)", value: 1000),
        ValueCase(function: "COUNT(*)", value: 8),
        ValueCase(function: "COUNT(*)", clause: "WHERE size > ?", parameters: [150], value: 3),
        ValueCase(function: "SUM(size)", clause: "WHERE owner = ?", parameters: ["alice"], value: 400),
        ValueCase(function: "SUM(size)", clause: "WHERE owner IN (?)", parameters: [["bob", "carol"]], value: 600),
        ValueCase(
            function: "AVG(size)", clause: "WHERE owner = ? AND size > ?", parameters: ["alice", 0], value: 200.0),
        ValueCase(function: "AVG(size)", clause: "WHERE collection = ?", parameters: ["m"], value: 200.0),
        ValueCase(function: "MAX(size)", value: 400),
        ValueCase(function: "SUM(files)", clause: "WHERE owner = ?", parameters: ["alice"], value: 2),
        ValueCase(function: "COUNT(*)", clause: "WHERE owner = ?", parameters: ["nobody"], value: 0),
        ValueCase(function: "TOTAL(size)", clause: "WHERE owner = ?", parameters: ["nobody"], value: 0.0),
        ValueCase(function: "SUM(size)", clause: "WHERE owner IN (?)", parameters: [[]], value: nil),
        ValueCase(
            index: "media", function: "SUM(duration)", clause: "WHERE kind = ?", parameters: ["clip"], value: 30.5),
        ValueCase(index: "media", function: "COUNT(*)", value: 3),
        ValueCase(
            index: "media", function: "group_concat(kind, ',')", clause: "WHERE duration < ?", parameters: [15],
            value: "clip"),
    ]

    @Test("an aggregate without grouping returns one value", arguments: valueCases)
    func singleValue(_ c: ValueCase) throws {
        let f = try Self.populated()
        let result = try f.store.aggregate(
            index: c.index, function: c.function, clause: c.clause, parameters: c.parameters)
        #expect(result == .value(c.value))
        #expect(result.json == ["value": c.value])
    }

    @Test("group by owner returns one row per owner with its sum")
    func groupByOwner() throws {
        let f = try Self.populated()
        let result = try f.store.aggregate(function: "SUM(size)", groupBy: ["owner"])
        guard case .rows(let rows) = result else {
            Issue.record("expected rows, got \(result)")
            return
        }
        #expect(rows.count == 3)
        let byOwner = Dictionary(
            rows.map { ($0["owner"]?.stringValue ?? "?", $0["value"]) }, uniquingKeysWith: { a, _ in a })
        #expect(byOwner == ["alice": .int(400), "bob": .int(200), "carol": .int(400)])
        #expect(rows.allSatisfy { Set($0.keys) == ["owner", "value"] })
    }

    @Test("group by with a WHERE clause and parameters groups only the matching rows")
    func groupByWithClause() throws {
        let f = try Self.populated()
        let result = try f.store.aggregate(
            function: "COUNT(*)", clause: "WHERE size >= ? AND collection = ?", parameters: [100, "m"],
            groupBy: ["owner"])
        guard case .rows(let rows) = result else {
            Issue.record("expected rows, got \(result)")
            return
        }
        let byOwner = Dictionary(
            rows.map { ($0["owner"]?.stringValue ?? "?", $0["value"]) }, uniquingKeysWith: { a, _ in a })
        #expect(byOwner == ["alice": .int(2), "bob": .int(1), "carol": .int(1)])
    }

    @Test("group by two columns of a user index")
    func groupByTwoColumns() throws {
        let f = try Self.populated()
        let result = try f.store.aggregate(index: "media", function: "SUM(duration)", groupBy: ["collection", "kind"])
        guard case .rows(let rows) = result else {
            Issue.record("expected rows, got \(result)")
            return
        }
        let set = Set(rows.map { JSONValue.object($0) })
        #expect(
            set == [
                ["collection": "v", "kind": "clip", "value": 30.5],
                ["collection": "v", "kind": "film", "value": 60.0],
            ])
        #expect(result.json["rows"]?.arrayValue?.count == 2)
    }

    @Test("the sums per owner stay right after deletes and re-puts")
    func groupsFollowWrites() throws {
        let f = try Self.populated()
        try f.delete(ref("m", "c"))
        try put(f, ref("m", "b"), [:], owner: "carol")  // bob's file goes; b moves to carol
        let result = try f.store.aggregate(function: "SUM(size)", groupBy: ["owner"])
        guard case .rows(let rows) = result else {
            Issue.record("expected rows, got \(result)")
            return
        }
        let byOwner = Dictionary(
            rows.map { ($0["owner"]?.stringValue ?? "?", $0["value"]) }, uniquingKeysWith: { a, _ in a })
        #expect(byOwner == ["alice": .int(100), "bob": .int(0), "carol": .int(400)])
    }

    @Test(
        "grouping by a column the index does not have is query_rejected",
        arguments: [
            ("default", "nosuch"), ("default", "object_id"), ("default", "duration"), ("media", "owner"),
            ("media", "size"),
            ("default", "owner\" FROM object --"), ("default", ""),
        ])
    func unknownGroupColumn(_ index: String, _ column: String) throws {
        let f = try Self.populated()
        let e = expectCode(.queryRejected) {
            try f.store.aggregate(index: index, function: "COUNT(*)", groupBy: [column])
        }
        #expect(e != nil)
        if let e { #expect(leakedSQL(e.message, clientText: column).isEmpty, "\(e.message)") }
    }

    @Test("an aggregate's reply limit counts its result as written, names, quotes and escapes included")
    func replyLimitCountsTheJSON() throws {
        let f = try Fixture()
        try f.store.write { tx in
            for i in 0..<40 { try tx.put(ref("m", "k\(i)"), value: [:]) }
        }
        // Each value a quote, a newline and the key: written `"\"\nk1"`, twice its text.
        let cases: [(String, [String])] = [
            ("max('\"' || char(10) || key)", ["key"]), ("group_concat('\"' || char(10) || key)", []),
            // Rows too long to write for the count (past 4 KiB of text): counted, six bytes each.
            ("max(printf('%.*c', 5000, char(1)) || '\"' || key)", ["key"]),
            ("printf('%.*c', 5000, char(1)) || count(*)", []),
        ]
        for (function, groupBy) in cases {
            let all = try f.store.aggregate(function: function, groupBy: groupBy)
            var text = [UInt8]()
            all.json.write(to: &text)
            #expect(try f.store.aggregate(function: function, groupBy: groupBy, replyLimit: text.count) == all)
            let e = expectCode(.replyTooLarge) {
                try f.store.aggregate(function: function, groupBy: groupBy, replyLimit: text.count - 1)
            }
            #expect(e != nil, "\(function) within \(text.count - 1) bytes")
        }
    }

    @Test("an aggregate on an unknown index is not_found, and wrong parameter counts are invalid_params")
    func aggregateErrors() throws {
        let f = try Self.populated()
        #expect(expectCode(.notFound) { try f.store.aggregate(index: "nope", function: "COUNT(*)") } != nil)
        #expect(
            expectCode(.invalidParams) {
                try f.store.aggregate(function: "COUNT(*)", clause: "WHERE owner = ?", parameters: [])
            } != nil)
        #expect(expectCode(.queryRejected) { try f.store.aggregate(function: "COUNT(*); SELECT 1") } != nil)
    }
}
