// Index queries (assetd(8), DATA MODEL, Secondary indexes): a SQL suffix with positional
// `?` parameters of every JSON scalar type; arrays expand for `IN (?)` (empty matches
// nothing); `?` in literals and comments is text; wrong parameter counts are
// invalid_params; results as keys, rows or objects.

import Testing
import AssetStore
import AssetStoreTestSupport

@Suite struct QueryTests {
    static let media = IndexDefinition(
        name: "media", version: "1",
        columns: [
            column("duration", .real, "duration"), column("kind", .text, "kind"), column("hd", .boolean, "hd"),
            column("year", .integer, "year"),
        ])

    /// Five objects with known sizes and owners, and a user index over some of them.
    static func populated() throws -> Fixture {
        let f = try Fixture {
            $0.indexes = [media]; $0.defaultOwner = "nobody"
        }
        let sizes = ["a": 100, "b": 200, "c": 300, "d": 400, "e": 0]
        for (k, s) in sizes where s > 0 { try f.makeFile("\(k).bin", size: s) }
        let owners = ["a": "alice", "b": "bob", "c": "alice", "d": "carol", "e": "who?"]
        try f.store.write { tx in
            for k in sizes.keys.sorted() {
                var v: [String: JSONValue] = ["owner": .string(owners[k]!)]
                if sizes[k]! > 0 { v["file"] = .string(f.root + "/\(k).bin") }
                try tx.put(ref("m", k), value: .object(v))
            }
        }
        try f.store.write { tx in
            try tx.put(ref("v", "x"), value: ["duration": 1.5, "kind": "clip", "hd": true, "year": 2024])
            try tx.put(ref("v", "y"), value: ["duration": 90, "kind": "film", "hd": false, "year": 1999])
            try tx.put(ref("v", "z"), value: ["kind": "it's", "year": 2024])
        }
        return f
    }

    struct ParameterCase: Sendable, CustomTestStringConvertible {
        var index: String
        var clause: String
        var parameters: [JSONValue]
        var keys: Set<String>
        var testDescription: String { "\(index): \(clause) with \(parameters)" }
    }

    static let parameterCases: [ParameterCase] = [
        ParameterCase(index: "default", clause: "WHERE owner = ?", parameters: ["alice"], keys: ["a", "c"]),
        ParameterCase(index: "default", clause: "WHERE size = ?", parameters: [200], keys: ["b"]),
        ParameterCase(
            index: "default", clause: "WHERE size > ? AND size < ?", parameters: [150.5, 350], keys: ["b", "c"]),
        ParameterCase(index: "default", clause: "WHERE owner IS ?", parameters: [nil], keys: []),
        ParameterCase(index: "default", clause: "WHERE files = ?", parameters: [true], keys: ["a", "b", "c", "d"]),
        ParameterCase(index: "default", clause: "WHERE files = ?", parameters: [false], keys: ["e", "x", "y", "z"]),
        ParameterCase(index: "media", clause: "WHERE hd = ?", parameters: [true], keys: ["x"]),
        ParameterCase(index: "media", clause: "WHERE hd = ?", parameters: [false], keys: ["y"]),
        ParameterCase(index: "media", clause: "WHERE hd IS ?", parameters: [nil], keys: ["z"]),
        ParameterCase(index: "media", clause: "WHERE duration = ?", parameters: [1.5], keys: ["x"]),
        ParameterCase(index: "media", clause: "WHERE duration = ?", parameters: [90], keys: ["y"]),
        ParameterCase(index: "media", clause: "WHERE year = ?", parameters: [2024], keys: ["x", "z"]),
        ParameterCase(index: "media", clause: "WHERE kind = ?", parameters: ["it's"], keys: ["z"]),
        // Arrays expand for IN; an element that matches nothing (5.5) just does not match.
        ParameterCase(
            index: "default", clause: "WHERE owner IN (?)", parameters: [["alice", "carol"]], keys: ["a", "c", "d"]),
        ParameterCase(index: "default", clause: "WHERE size IN (?)", parameters: [[100, 5.5, 400]], keys: ["a", "d"]),
        ParameterCase(index: "default", clause: "WHERE owner IN (?)", parameters: [["alice"]], keys: ["a", "c"]),
        // An empty array matches nothing, even negated.
        ParameterCase(index: "default", clause: "WHERE owner IN (?)", parameters: [[]], keys: []),
        ParameterCase(index: "default", clause: "WHERE owner NOT IN (?)", parameters: [[]], keys: []),
        // Two arrays and scalars around them, in order.
        ParameterCase(
            index: "default", clause: "WHERE size >= ? AND owner IN (?) AND key IN (?) AND size <= ?",
            parameters: [100, ["alice", "bob"], ["a", "b", "c"], 250], keys: ["a", "b"]),
        ParameterCase(
            index: "default", clause: "WHERE owner IN (?) OR key IN (?)", parameters: [[], ["e"]], keys: ["e"]),
        // A ? inside a string literal, a quoted identifier or a comment is not a parameter.
        ParameterCase(
            index: "default", clause: "WHERE owner = 'who?' OR owner = ?", parameters: ["bob"], keys: ["b", "e"]),
        ParameterCase(index: "default", clause: "WHERE owner = 'it''s ?' OR size = ?", parameters: [300], keys: ["c"]),
        ParameterCase(index: "default", clause: "WHERE \"owner\" = ? -- why?\n", parameters: ["carol"], keys: ["d"]),
        ParameterCase(index: "default", clause: "WHERE /* ? */ owner = ?", parameters: ["alice"], keys: ["a", "c"]),
        ParameterCase(
            index: "default", clause: "WHERE owner = 'é?😀' OR [owner] = ? OR `owner` = '?'", parameters: ["bob"],
            keys: ["b"]),
        ParameterCase(
            index: "default", clause: "WHERE owner IN (?) /* é */ AND size > ? -- ?",
            parameters: [["alice", "bob"], 100], keys: ["b", "c"]),
        // No clause at all, and WHERE 1, match everything.
        ParameterCase(index: "media", clause: "", parameters: [], keys: ["x", "y", "z"]),
        ParameterCase(index: "default", clause: "WHERE collection = ?", parameters: ["v"], keys: ["x", "y", "z"]),
        // Text binds whole: an empty string is text, not NULL; a NUL byte and what follows count.
        ParameterCase(index: "default", clause: "WHERE ? = '' AND owner = ?", parameters: ["", "bob"], keys: ["b"]),
        ParameterCase(index: "default", clause: "WHERE ? IS NULL", parameters: [""], keys: []),
        ParameterCase(
            index: "default", clause: "WHERE length(CAST(? AS BLOB)) = 6 AND owner = ?",
            parameters: ["é\u{0}bob", "bob"], keys: ["b"]),
        ParameterCase(index: "default", clause: "WHERE owner = ?", parameters: ["bob\u{0}"], keys: []),
    ]

    @Test("parameters of each JSON type bind, and arrays expand", arguments: parameterCases)
    func parameters(_ c: ParameterCase) throws {
        let f = try Self.populated()
        let rows = try f.store.query(index: c.index, clause: c.clause, parameters: c.parameters)
        #expect(Set(keys(rows)) == c.keys)
        #expect(rows.count == c.keys.count)
    }

    static let countMismatches: [(String, [JSONValue])] = [
        ("WHERE owner = ?", []),
        ("WHERE owner = ?", ["a", "b"]),
        ("WHERE owner = ? AND size > ?", ["a"]),
        ("WHERE owner = 'who?'", ["alice"]),
        ("", [1]),
        ("WHERE owner IN (?)", [["a"], ["b"]]),
    ]

    @Test("too many or too few parameters is invalid_params", arguments: countMismatches)
    func parameterCount(_ clause: String, _ parameters: [JSONValue]) throws {
        let f = try Self.populated()
        let e = expectCode(.invalidParams) { try f.store.query(clause: clause, parameters: parameters) }
        #expect(e != nil)
        let a = expectCode(.invalidParams) {
            try f.store.aggregate(function: "COUNT(*)", clause: clause, parameters: parameters)
        }
        #expect(a != nil)
    }

    @Test("an object or nested array as a parameter is invalid_params")
    func nonScalarParameters() throws {
        let f = try Self.populated()
        #expect(
            expectCode(.invalidParams) { try f.store.query(clause: "WHERE owner = ?", parameters: [["a": 1]]) } != nil)
        #expect(
            expectCode(.invalidParams) { try f.store.query(clause: "WHERE owner IN (?)", parameters: [[["a"]]]) } != nil
        )
    }

    @Test("numbered and named parameters are refused")
    func otherParameterForms() throws {
        let f = try Self.populated()
        for clause in [
            "WHERE owner = ?1", "WHERE owner = :o", "WHERE owner = @o", "WHERE owner = $o", "WHERE owner = ?²",
            "WHERE owner = ?9", "WHERE owner = ?0",
        ] {
            let e =
                expectCode(.queryRejected) { try f.store.query(clause: clause, parameters: ["alice"]) }
                ?? expectCode(.invalidParams) { try f.store.query(clause: clause, parameters: ["alice"]) }
            #expect(e != nil, "\(clause) was accepted")
        }
    }

    @Test("ORDER BY size DESC LIMIT n returns the n largest in order")
    func orderAndLimit() throws {
        let f = try Self.populated()
        let top = try f.store.query(clause: "ORDER BY size DESC LIMIT 3")
        #expect(keys(top) == ["d", "c", "b"])
        let alice = try f.store.query(clause: "WHERE owner = ? ORDER BY size DESC LIMIT ?", parameters: ["alice", 1])
        #expect(keys(alice) == ["c"])
        let page = try f.store.query(clause: "ORDER BY size DESC LIMIT 2 OFFSET 1")
        #expect(keys(page) == ["c", "b"])
        let ascending = try f.store.query(index: "media", clause: "WHERE duration IS NOT NULL ORDER BY duration")
        #expect(keys(ascending) == ["x", "y"])
    }

    @Test("include keys gives only references")
    func includeKeys() throws {
        let f = try Self.populated()
        let rows = try f.store.query(clause: "WHERE key = ?", parameters: ["a"], include: .keys)
        let row = try #require(rows.first)
        #expect(rows.count == 1)
        #expect(row.ref == ref("m", "a"))
        #expect(row.columns == nil)
        #expect(row.value == nil)
        #expect(row.json == ["collection": "m", "key": "a"])
    }

    @Test("include rows gives every column of the index")
    func includeRows() throws {
        let f = try Self.populated()
        let row = try #require(try f.store.query(clause: "WHERE key = ?", parameters: ["b"], include: .rows).first)
        let columns = try #require(row.columns)
        #expect(Set(columns.keys) == ["owner", "size", "files", "created", "modified", "accessed"])
        #expect(columns["owner"] == "bob")
        #expect(columns["size"] == 200)
        #expect(columns["files"] == 1)
        #expect(row.value == nil)
        let user = try #require(try f.store.query(index: "media", clause: "WHERE kind = 'clip'", include: .rows).first)
        #expect(user.ref == ref("v", "x"))
        #expect(user.columns == ["duration": 1.5, "kind": "clip", "hd": 1, "year": 2024])
    }

    @Test("text read back from a query is whole: a NUL inside and what follows it stay")
    func textWithNUL() throws {
        let f = try Self.populated()
        // (JSON's \u0000 cannot make one: SQLite's json_extract stops at it.)
        #expect(
            try f.store.aggregate(function: "MAX(key) || char(0) || 'z'", clause: "WHERE collection = 'm'")
                == .value("e\u{0}z"))
        let grouped = try f.store.aggregate(
            function: "group_concat(key, char(0))", clause: "WHERE owner = 'alice'", groupBy: ["owner"])
        #expect(grouped == .rows([["owner": "alice", "value": "a\u{0}c"]]))
    }

    @Test("include objects carries each object's value and metadata")
    func includeObjects() throws {
        let f = try Self.populated()
        try f.store.write { tx in
            try tx.put(ref("v", "w"), value: ["kind": "meta", "n": [1, 2]], metadata: ["etag": "abc"])
        }
        let rows = try f.store.query(
            index: "media", clause: "WHERE kind IN (?) ORDER BY kind", parameters: [["meta", "clip"]], include: .objects
        )
        #expect(rows.map(\.ref) == [ref("v", "x"), ref("v", "w")])
        #expect(rows[0].value == ["duration": 1.5, "kind": "clip", "hd": true, "year": 2024])
        #expect(rows[0].metadata == nil)
        #expect(rows[0].json["metadata"] == .null)
        #expect(rows[1].value == ["kind": "meta", "n": [1, 2]])
        #expect(rows[1].metadata == ["etag": "abc"])
        #expect(rows[1].columns?["kind"] == "meta")
        #expect(rows[1].json["value"]?["n"] == [1, 2])
    }

    @Test("a query sees each committed write and nothing of a failed one")
    func queriesSeeCommits() throws {
        let f = try Self.populated()
        #expect(try f.store.query(clause: "WHERE owner = ?", parameters: ["dave"]).isEmpty)
        try put(f, ref("m", "f"), ["owner": "dave"])
        #expect(keys(try f.store.query(clause: "WHERE owner = ?", parameters: ["dave"])) == ["f"])
        _ = expectCode(.notFound) {
            try f.store.write { tx in
                try tx.put(ref("m", "g"), value: ["owner": "dave"])
                try tx.delete(ref("m", "missing"))
            }
        }
        #expect(keys(try f.store.query(clause: "WHERE owner = ?", parameters: ["dave"])) == ["f"])
    }

    @Test("an unknown index is not_found")
    func unknownIndex() throws {
        let f = try Self.populated()
        let e = expectCode(.notFound) { try f.store.query(index: "missing", clause: "WHERE 1") }
        #expect(e != nil)
        #expect(expectCode(.notFound) { try f.store.query(index: "", clause: "") } != nil)
    }

    @Test("an invalid clause is query_rejected")
    func invalidClause() throws {
        let f = try Self.populated()
        for clause in ["WHERE nosuch = 1", "WHERE", "ORDER BY", "WHERE (size", "LIMIT 'x' 'y'"] {
            #expect(expectCode(.queryRejected) { try f.store.query(clause: clause) } != nil, "\(clause)")
        }
    }

    @Test("a closed store refuses queries")
    func closedStore() throws {
        let f = try Self.populated()
        f.store.close()
        #expect(throws: StoreError.self) { try f.store.query(clause: "") }
    }
}
