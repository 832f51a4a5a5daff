// The query authorizer (assetd(8), DATA MODEL, Secondary indexes): a clause may read its own index
// table and call allowed functions, nothing else. Each refusal is query_rejected, leaves the data
// as it was, and its message shows none of the engine's own SQL.

import Testing
@testable import AssetStore
import AssetStoreTestSupport

@Suite struct QueryAuthorizerTests {
    static let media = IndexDefinition(
        name: "media", version: "1", columns: [column("duration", .real, "duration"), column("kind", .text, "kind")])

    static func populated() throws -> Fixture {
        let f = try Fixture { $0.indexes = [media] }
        let p = try f.makeFile("a.bin", size: 100)
        try f.store.write { tx in
            try tx.put(ref("m", "a"), value: ["file": .string(p), "duration": 3.5, "kind": "clip"], owner: "alice")
            try tx.put(ref("m", "b"), value: ["kind": "still"], owner: "bob")
        }
        return f
    }

    /// Runs `body`, expects query_rejected with a clean message, and the store unchanged.
    func expectRefused(
        _ f: Fixture, _ clientText: String, sourceLocation: SourceLocation = #_sourceLocation,
        _ body: () throws -> Void
    ) throws {
        let before = try StoreSnapshot(f)
        var thrown: (any Error)?
        do { try body() } catch { thrown = error }
        let e = thrown as? StoreError
        #expect(
            e?.code == .queryRejected, "\(clientText): got \(thrown.map { "\($0)" } ?? "no error")",
            sourceLocation: sourceLocation)
        if let e {
            #expect(
                leakedSQL(e.message, clientText: clientText).isEmpty,
                "message shows the engine's SQL: \(e.message)", sourceLocation: sourceLocation)
        }
        #expect(try StoreSnapshot(f) == before, "\(clientText) changed the store", sourceLocation: sourceLocation)
        // The store still answers.
        #expect(
            keys(try f.store.query(clause: "WHERE owner = ?", parameters: ["alice"])) == ["a"],
            sourceLocation: sourceLocation)
    }

    static let refusedClauses: [String] = [
        // A second statement, in its write and read forms.
        "WHERE 1; DELETE FROM object",
        "WHERE 1; DELETE FROM index_default",
        "WHERE 1; DROP TABLE object",
        "WHERE 1; INSERT INTO object (collection, key, value, owner, created, modified, accessed) VALUES ('x','y','{}','o',0,0,0)",
        "WHERE 1; UPDATE index_default SET size = 0",
        "WHERE 1; CREATE TABLE evil (x)",
        "WHERE 1; VACUUM",
        "WHERE 1; SELECT * FROM object",
        "WHERE 1;; DELETE FROM object",
        "WHERE 1 /* */ ; DELETE FROM object",
        // PRAGMA, as a statement and as a table-valued function.
        "WHERE 1; PRAGMA user_version",
        "WHERE 1; PRAGMA user_version = 7",
        "WHERE 1; PRAGMA writable_schema = ON",
        "WHERE key IN (SELECT name FROM pragma_table_info('object'))",
        "WHERE 1 AND (SELECT COUNT(*) FROM pragma_database_list) > 0",
        // ATTACH.
        "WHERE 1; ATTACH DATABASE '/tmp/assetd-evil.sqlite' AS evil",
        "WHERE 1; DETACH DATABASE main",
        // Other tables, in subqueries, joins and compound selects.
        "WHERE key IN (SELECT key FROM object)",
        "WHERE key IN (SELECT path FROM file)",
        "WHERE key IN (SELECT name FROM edge)",
        "WHERE key IN (SELECT name FROM sqlite_master)",
        "WHERE key IN (SELECT name FROM sqlite_schema)",
        "WHERE key IN (SELECT name FROM main.sqlite_master)",
        "WHERE key IN (SELECT key FROM meta)",
        "WHERE key IN (SELECT path FROM unlink_queue)",
        "WHERE key IN (SELECT key FROM index_media)",
        "WHERE EXISTS (SELECT 1 FROM object)",
        "WHERE (SELECT COUNT(*) FROM object) > 0",
        "JOIN object o ON o.id = object_id",
        ", object",
        "WHERE 1 UNION ALL SELECT * FROM index_media",
        // A compound SELECT makes up rows of any shape, with as many columns as it likes.
        "WHERE 1 UNION SELECT 1, 2",
        "WHERE 1 UNION SELECT 1, 2, 3",
        "WHERE 0 union all select owner, key FROM index_default",
        "WHERE 1 UNION/**/SELECT 1, 2",
        "WHERE 1 INTERSECT SELECT collection, key FROM index_default",
        "WHERE 1 EXCEPT SELECT 'm', 'a'",
        "WHERE key IN (SELECT key FROM index_default)) UNION SELECT 1, 2 --",
        "WHERE key IN (WITH t AS (SELECT key FROM object) SELECT key FROM t)",
        // The built-in index is a view of object; naming object without reading a column of
        // it, in any spelling, is still another table.
        "WHERE EXISTS (SELECT 1 FROM \"OBJECT\")",
        "WHERE EXISTS (SELECT 1 FROM [Object])",
        "WHERE EXISTS (SELECT 1 FROM `object`)",
        "WHERE EXISTS (SELECT 1 FROM 'object')",
        "WHERE EXISTS (SELECT 1 FROM main.\"object\")",
        ", main.object",
        "WHERE 0 < (SELECT COUNT(*) FROM index_default, object)",
        // SQLite reports a client's CTE named like the view as the view: only the view's
        // columns pass (found in review: value, metadata and pinned were readable).
        "WHERE key IN (WITH index_default AS (SELECT key, value FROM object) SELECT key FROM index_default WHERE value LIKE '%a%')",
        "WHERE key IN (WITH Index_Default AS (SELECT key, metadata FROM object) SELECT key FROM Index_Default WHERE metadata IS NULL)",
        "WHERE key IN (WITH index_default AS (SELECT key, pinned FROM object) SELECT key FROM index_default WHERE pinned = 0)",
        "WHERE 0 UNION ALL SELECT 0, value, metadata FROM (WITH index_default AS (SELECT value, metadata FROM object) SELECT * FROM index_default)",
        "WHERE key IN (SELECT key FROM (SELECT key, value FROM object) AS index_default WHERE value IS NOT NULL)",
        // A USING or NATURAL join compares columns SQLite never shows the authorizer: object
        // was readable through one (20,000 rows), and so was any other table.
        "WHERE key IN (SELECT key FROM index_default JOIN object USING (key))",
        "WHERE key IN (SELECT key FROM index_default AS i JOIN object AS o USING (key))",
        "WHERE key IN (SELECT key FROM index_default JOIN main.object USING (key))",
        "WHERE key IN (SELECT key FROM index_default JOIN \"object\" USING (collection, key))",
        "WHERE key IN (SELECT key FROM index_default NATURAL JOIN object)",
        "WHERE key IN (SELECT key FROM index_default natural left join object)",
        "WHERE key IN (SELECT k FROM (SELECT key AS k, key FROM index_default JOIN object USING (key)))",
        "WHERE key IN (WITH t AS (SELECT key FROM index_default JOIN object USING (key)) SELECT key FROM t)",
        "WHERE key IN (SELECT key FROM index_default JOIN meta USING (key))",
        "WHERE EXISTS (SELECT 1 FROM index_default b JOIN object /* x */ USING(key) WHERE b.key = 'zz')",
        // Functions outside the allowlist.
        "WHERE load_extension('x') IS NULL",
        "WHERE randomblob(4) IS NOT NULL",
        "WHERE random() > 0",
        "WHERE sqlite_version() IS NOT NULL",
        "WHERE zeroblob(10) IS NOT NULL",
        "WHERE readfile('/etc/passwd') IS NOT NULL",
        "WHERE sqlite_offset(size) > 0",
        "WHERE changes() >= 0",
        "ORDER BY random()",
    ]

    @Test("a clause that does anything but read its index is query_rejected", arguments: refusedClauses)
    func refusedClause(_ clause: String) throws {
        let f = try Self.populated()
        try expectRefused(f, clause) { _ = try f.store.query(clause: clause) }
        try expectRefused(f, clause) { _ = try f.store.query(clause: clause, include: .objects) }
        try expectRefused(f, clause) { _ = try f.store.aggregate(function: "COUNT(*)", clause: clause) }
    }

    static let refusedUserClauses: [String] = [
        "WHERE key IN (SELECT key FROM index_default)",
        "WHERE key IN (SELECT key FROM \"index_default\")",
        "WHERE 1 UNION ALL SELECT object_id, collection, key, NULL, NULL FROM index_default",
        "WHERE key IN (SELECT key FROM object)",
        "WHERE 1; DROP TABLE index_media",
        "WHERE key IN (SELECT key FROM index_media JOIN object USING (key))",
        "WHERE key IN (SELECT key FROM index_media NATURAL JOIN index_default)",
        "WHERE key IN (SELECT key FROM index_media m JOIN meta USING (key))",
    ]

    @Test("a user index query may not read the default index or any other table", arguments: refusedUserClauses)
    func userIndexIsolated(_ clause: String) throws {
        let f = try Self.populated()
        try expectRefused(f, clause) { _ = try f.store.query(index: "media", clause: clause) }
        try expectRefused(f, clause) { _ = try f.store.aggregate(index: "media", function: "COUNT(*)", clause: clause) }
    }

    static let refusedFunctions: [String] = [
        "(SELECT COUNT(*) FROM object)",
        "(SELECT COUNT(*) FROM index_media)",
        "(SELECT group_concat(name) FROM sqlite_master)",
        "COUNT(*) FROM index_default UNION SELECT COUNT(*) FROM object --",
        "COUNT(*); DELETE FROM object",
        "COUNT(*) FROM index_default; DELETE FROM object; SELECT 1",
        "randomblob(8)",
        "load_extension('x')",
        "SUM(random())",
        "(SELECT COUNT(*) FROM pragma_table_info('object'))",
        "(WITH index_default AS (SELECT value, metadata, pinned FROM object) SELECT group_concat(value || pinned) FROM index_default)",
        "(SELECT COUNT(*) FROM index_default JOIN object USING (key))",
    ]

    @Test("an aggregate's function text is held to the same rules", arguments: refusedFunctions)
    func refusedFunction(_ function: String) throws {
        let f = try Self.populated()
        try expectRefused(f, function) { _ = try f.store.aggregate(function: function) }
        try expectRefused(f, function) { _ = try f.store.aggregate(function: function, groupBy: ["owner"]) }
    }

    static let allowed: [(String, String)] = [
        ("SUM(size)", "WHERE lower(owner) = 'alice' AND length(key) = 1"),
        ("COUNT(*)", "WHERE json_extract(json_object('k', owner), '$.k') = 'alice'"),
        ("MAX(accessed)", "WHERE datetime(accessed, 'unixepoch') > '2000-01-01'"),
        ("total(size)", "WHERE coalesce(owner, '') <> '' AND abs(size) >= 0"),
        ("group_concat(key, ',')", "WHERE instr(owner, 'li') > 0 AND substr(owner, 1, 1) = 'a'"),
        ("printf('%d', SUM(size))", "WHERE size BETWEEN ? AND ?"),
    ]

    @Test("allowed scalar, aggregate, date and JSON functions work", arguments: allowed)
    func allowedFunctions(_ function: String, _ clause: String) throws {
        let f = try Self.populated()
        let parameters: [JSONValue] = clause.contains("?") ? [1, 1000] : []
        let result = try f.store.aggregate(function: function, clause: clause, parameters: parameters)
        guard case .value(let v) = result else {
            Issue.record("expected a value, got \(result)")
            return
        }
        #expect(!v.isNull, "\(function) \(clause)")
        #expect(try !f.store.query(clause: clause, parameters: parameters).isEmpty)
    }

    @Test("the words USING and NATURAL in a literal, a quoted name or a comment are no join")
    func joinWordsElsewhere() throws {
        let f = try Self.populated()
        #expect(try f.store.query(clause: "WHERE key != 'using natural' -- using\n").count == 2)
        #expect(
            try f.store.query(
                clause: "WHERE \"key\" != 'x' /* NATURAL JOIN object */ AND [key] != 'Using' AND `key` IS NOT NULL"
            ).count == 2)
        #expect(
            try f.store.query(clause: "WHERE owner IN (SELECT \"natural\".owner FROM index_default AS \"natural\")")
                .count == 2)
        #expect(
            try f.store.aggregate(
                function: "COUNT(*)",
                clause: "WHERE key IN (SELECT b.key FROM index_default b JOIN index_default c ON b.key = c.key)")
                == .value(2))
    }

    @Test("a compound SELECT inside a subquery, and the words in literals and names, are allowed")
    func compoundInSubquery() throws {
        let f = try Self.populated()
        #expect(
            keys(
                try f.store.query(
                    clause: "WHERE key IN (SELECT key FROM index_default WHERE size > 0 UNION SELECT 'b')")
            ).sorted()
                == ["a", "b"])
        #expect(
            try f.store.aggregate(
                function: "COUNT(*)", clause: "WHERE key IN (SELECT key FROM index_default EXCEPT SELECT 'a')")
                == .value(1))
        #expect(try f.store.query(clause: "WHERE key != 'union' AND \"key\" != 'x' -- UNION SELECT 1, 2\n").count == 2)
    }

    @Test("queries that use no column of the built-in index (a view of object) are allowed")
    func viewWithoutColumns() throws {
        let f = try Self.populated()
        #expect(try f.store.aggregate(function: "COUNT(*)") == .value(2))
        #expect(
            try f.store.aggregate(function: "COUNT(*)", clause: "WHERE EXISTS (SELECT 1 FROM index_default b)")
                == .value(2))
        #expect(try f.store.query(clause: ", index_default b").count == 4)
        #expect(try f.store.aggregate(function: "COUNT(*)", clause: "WHERE key != 'object'") == .value(2))
        #expect(try f.store.query(clause: "WHERE EXISTS (SELECT 1 FROM index_default b)").count == 2)
        #expect(try f.store.aggregate(index: "media", function: "COUNT(*)") == .value(2))
    }

    @Test(
        "the view named in another letter case is still the index (found in review)",
        arguments: [
            "WHERE owner IN (SELECT owner FROM INDEX_DEFAULT)",
            "WHERE owner IN (SELECT b.owner FROM \"Index_Default\" b)",
            "WHERE size >= (SELECT MAX(size) FROM Index_default)",
        ])
    func viewInOtherCase(_ clause: String) throws {
        let f = try Self.populated()
        #expect(try f.store.query(clause: clause).count >= 1)
        #expect(try f.store.aggregate(function: "COUNT(*)", clause: clause) != .value(0))
    }

    @Test("a query that uses no column of the view is refused if its text says object anywhere (the rule is the word)")
    func wordObjectInColumnlessQuery() throws {
        let f = try Self.populated()
        _ = expectCode(.queryRejected) {
            try f.store.aggregate(
                function: "COUNT(*)",
                clause: "WHERE EXISTS (SELECT 1 FROM index_default b WHERE b.collection = 'object')")
        }
        // With a column of the view used, the word is only a word.
        #expect(try f.store.aggregate(function: "COUNT(*)", clause: "WHERE collection != 'object'") == .value(2))
    }

    @Test(
        "the word object is found in any case and quoting, and not inside other names",
        arguments: [
            ("FROM object", true), ("FROM \"OBJECT\"", true), ("FROM [oBjEcT]", true), ("x.object)", true),
            ("object", true), ("'object'", true), ("object_id", false), ("index_object", false), ("objects", false),
            ("$object", false), ("objecté", false), ("obj ect", false), ("", false),
        ])
    func namesObject(_ text: String, _ expected: Bool) {
        #expect(QueryConnection.namesObject(text) == expected, "\(text)")
    }

    @Test("the engine's own reads still work after a refused query on the same connection")
    func refusalDoesNotPoisonConnection() throws {
        let f = try Self.populated()
        for _ in 0..<3 {
            _ = expectCode(.queryRejected) { try f.store.query(clause: "WHERE key IN (SELECT key FROM object)") }
            let rows = try f.store.query(clause: "WHERE 1 ORDER BY key", include: .objects)
            #expect(rows.map(\.ref) == [ref("m", "a"), ref("m", "b")])
            #expect(rows.allSatisfy { $0.value != nil })
        }
    }

    struct Malformed: Sendable, CustomTestStringConvertible {
        var function: String
        var clause: String
        var groupBy: [String] = []
        var testDescription: String { "function \(function), clause \(clause), group by \(groupBy)" }
    }

    static let malformed: [Malformed] = [
        Malformed(function: "COUNT(", clause: ""),
        Malformed(function: "SUM(size),", clause: ""),
        Malformed(function: "", clause: ""),
        Malformed(function: "SUM(size) AS", clause: ""),
        Malformed(function: "COUNT(*)", clause: "WHERE"),
        Malformed(function: "COUNT(*)", clause: "WHERE (size"),
        Malformed(function: "COUNT(*)", clause: "ORDER BY"),
        Malformed(function: "COUNT(*)", clause: "WHERE size IN ("),
        Malformed(function: "COUNT(*)", clause: "WHERE nosuch = 1"),
        Malformed(function: "SUM(size)", clause: "LIMIT 5", groupBy: ["owner"]),
        Malformed(function: "SUM(size)", clause: "WHERE", groupBy: ["owner"]),
    ]

    @Test("a malformed function or clause is query_rejected without echoing the engine's SQL", arguments: malformed)
    func malformedText(_ m: Malformed) throws {
        let f = try Self.populated()
        try expectRefused(f, m.function + " " + m.clause) {
            _ = try f.store.aggregate(function: m.function, clause: m.clause, groupBy: m.groupBy)
        }
        if m.function == "COUNT(*)" {
            try expectRefused(f, m.clause) { _ = try f.store.query(clause: m.clause) }
        }
    }
}
