// index.define, index.list, index.query and index.aggregate over the socket (assetd(8), CONTROL
// PROTOCOL, Methods; DATA MODEL, Secondary indexes): user indexes and their rebuild, the default
// index's columns, and what the authorizer refuses.

import AssetClient
import AssetStore
import ControlProtocol
import Foundation
import Testing

extension MethodTests {
    @Test("index.define adds a user index that index.list shows and index.query answers")
    func userIndex() throws {
        let h = try DaemonHarness()
        let c = try h.client()
        let definition: JSONValue = [
            "name": "media", "version": "1", "collections": ["photos"],
            "columns": [
                ["name": "duration", "type": "real", "path": "$.duration"],
                ["name": "kind", "type": "text", "path": "$.kind"],
            ],
        ]
        #expect(try c.call("index.define", definition)["commit"]?.intValue != nil)
        let names = try c.call("index.list")["indexes"]?.arrayValue?.compactMap { $0["name"]?.stringValue } ?? []
        #expect(names.contains("default"))
        #expect(names.contains("media"))

        try c.putObject("photos", "p1", ["duration": 3.5, "kind": "clip"])
        try c.putObject("photos", "p2", ["duration": 10, "kind": "movie"])
        try c.putObject("photos", "p3", ["other": true])
        try c.putObject("videos", "v1", ["duration": 99])
        let q = try c.call(
            "index.query", ["index": "media", "where": "WHERE duration > ? ORDER BY duration", "params": [1]])
        #expect(q["rows"] == [ref("photos", "p1"), ref("photos", "p2")])
        let all = try c.call("index.query", ["index": "media", "where": ""])
        #expect(all["rows"]?.arrayValue?.count == 2, "no row for p3 (all null) nor v1 (other collection)")

        let rows = try c.call(
            "index.query", ["index": "media", "where": "WHERE kind = ?", "params": ["movie"], "include": "rows"])
        #expect(rows["rows"]?.arrayValue?.first?["duration"]?.doubleValue == 10)
        #expect(rows["rows"]?.arrayValue?.first?["kind"] == "movie")
        let objects = try c.call(
            "index.query", ["index": "media", "where": "WHERE kind = ?", "params": ["clip"], "include": "objects"])
        #expect(objects["rows"]?.arrayValue?.first?["value"] == ["duration": 3.5, "kind": "clip"])
        #expect(objects["rows"]?.arrayValue?.first?["metadata"] == .null)

        expectRPCError(Code.application, "not_found") { () throws(ClientError) in
            try c.call("index.query", ["index": "nonesuch", "where": ""])
        }
    }

    @Test("index.define with a new version rebuilds the index from the objects")
    func indexRebuild() throws {
        let h = try DaemonHarness()
        let c = try h.client()
        try c.putObject("m", "a", ["w": 5, "h": 1])
        try c.putObject("m", "b", ["w": 1, "h": 9])
        let columns: [JSONValue] = [["name": "w", "type": "integer", "path": "$.w"]]
        try c.call("index.define", ["name": "dims", "version": "1", "columns": .array(columns)])
        #expect(
            try c.call("index.query", ["index": "dims", "where": "ORDER BY w"])["rows"] == [
                ref("m", "b"), ref("m", "a"),
            ])
        try c.call(
            "index.define",
            ["name": "dims", "version": "2", "columns": [["name": "w", "type": "integer", "path": "$.h"]]])
        #expect(
            try c.call("index.query", ["index": "dims", "where": "ORDER BY w"])["rows"] == [
                ref("m", "a"), ref("m", "b"),
            ])
    }

    @Test("the default index answers owner, size and key queries, with array params for IN")
    func defaultIndexQueries() throws {
        let h = try DaemonHarness()
        let c = try h.client()
        try c.putObject("q", "o1", ["file": .string(try h.makeFile("1", size: 100))], owner: "alice")
        try c.putObject("q", "o2", ["file": .string(try h.makeFile("2", size: 300))], owner: "alice")
        try c.putObject("q", "o3", ["file": .string(try h.makeFile("3", size: 200))], owner: "bob")
        func keys(_ clause: String, _ params: JSONValue = []) throws -> [String] {
            (try c.call("index.query", ["where": .string(clause), "params": params])["rows"]?.arrayValue ?? [])
                .compactMap {
                    $0["key"]?.stringValue
                }
        }
        #expect(try keys("WHERE owner = ? ORDER BY size DESC", ["alice"]) == ["o2", "o1"])
        #expect(try keys("WHERE size > ? ORDER BY key", [150]) == ["o2", "o3"])
        #expect(try keys("WHERE key IN (?) ORDER BY key", [["o1", "o3"]]) == ["o1", "o3"])
        #expect(try keys("WHERE key IN (?)", [[]]) == [])
        #expect(try keys("ORDER BY accessed LIMIT 1") == ["o1"])
        let rows = try c.call("index.query", ["where": "WHERE key = ?", "params": ["o3"], "include": "rows"])
        let row = try #require(rows["rows"]?.arrayValue?.first)
        #expect(row["owner"] == "bob")
        #expect(row["size"] == 200)
        #expect(row["files"] == 1)
        #expect(row["collection"] == "q")
        #expect(row["created"]?.doubleValue != nil)
    }

    @Test("index.aggregate computes one value, or one row per group with group_by")
    func aggregate() throws {
        let h = try DaemonHarness()
        let c = try h.client()
        try c.putObject("q", "o1", ["file": .string(try h.makeFile("1", size: 100))], owner: "alice")
        try c.putObject("q", "o2", ["file": .string(try h.makeFile("2", size: 300))], owner: "alice")
        try c.putObject("q", "o3", ["file": .string(try h.makeFile("3", size: 200))], owner: "bob")
        #expect(try c.call("index.aggregate", ["function": "SUM(size)"]) == ["value": 600])
        #expect(
            try c.call("index.aggregate", ["function": "COUNT(*)", "where": "WHERE owner = ?", "params": ["alice"]])
                == ["value": 2])
        let grouped = try c.call("index.aggregate", ["function": "SUM(size)", "group_by": ["owner"]])
        let rows = try #require(grouped["rows"]?.arrayValue)
        #expect(Set(rows) == [["owner": "alice", "value": 400], ["owner": "bob", "value": 200]])
    }

    /// Clauses the query authorizer must refuse.
    static let rejectedClauses = [
        "WHERE 1; DELETE FROM object",
        "WHERE key IN (SELECT name FROM sqlite_master)",
        "WHERE key IN (SELECT key FROM object)",
        "WHERE load_extension('x') IS NULL",
        "WHERE 1 UNION SELECT 1, 2",
    ]

    @Test(
        "index.query refuses writes, other tables and second statements with query_rejected", arguments: rejectedClauses
    )
    func queryRejected(_ clause: String) throws {
        let h = try DaemonHarness()
        let c = try h.client()
        try c.putObject("z", "k")
        let e = expectRPCError(Code.application, "query_rejected") { () throws(ClientError) in
            try c.call("index.query", ["where": .string(clause)])
        }
        #expect(e?.message.contains("SELECT") != true, "messages never contain SQL text: \(e?.message ?? "")")
        #expect(try c.getObject("z", "k") != .null)
        #expect(try c.call("ping")["version"] != nil)
    }

    @Test("index.aggregate refuses a function outside the allowed list with query_rejected")
    func aggregateRejected() throws {
        let h = try DaemonHarness()
        let c = try h.client()
        try c.putObject("z", "k")
        expectRPCError(Code.application, "query_rejected") { () throws(ClientError) in
            try c.call("index.aggregate", ["function": "SUM(size)) FROM object_index; DELETE FROM object; --"])
        }
        expectRPCError(Code.application, "query_rejected") { () throws(ClientError) in
            try c.call(
                "index.aggregate", ["function": "COUNT(*)", "where": "WHERE key IN (SELECT name FROM sqlite_master)"])
        }
        #expect(try c.getObject("z", "k") != .null)
    }
}
