// User indexes (assetd.toml(5), [[indexes]]; assetd(8), DATA MODEL, Secondary indexes): defined in
// the configuration or in a transaction, typed columns from JSON paths (wrong JSON types store
// NULL), allowed collections, no row for all-null columns, rebuilt on a version change and only
// then, SQL names qualified by the index name.

import Testing
import AssetStore
import AssetStoreTestSupport

@Suite struct UserIndexTests {
    static let media = IndexDefinition(
        name: "media", version: "2026-11-21", collections: ["photos", "videos"],
        columns: [column("duration", .real, "$.duration"), column("kind", .text, "$.kind")])

    @Test("an index from the configuration gets rows for existing and new objects of its collections")
    func configuredIndex() throws {
        let f = try Fixture { $0.indexes = [Self.media] }
        try put(f, ref("videos", "v1"), ["duration": 12.5, "kind": "clip"])
        try put(f, ref("photos", "p1"), ["kind": "still"])
        try put(f, ref("docs", "d1"), ["duration": 3.0, "kind": "pdf"])
        let rows = try indexContents(f.store, index: "media")
        #expect(
            rows == [
                ref("videos", "v1"): ["duration": 12.5, "kind": "clip"],
                ref("photos", "p1"): ["duration": nil, "kind": "still"],
            ])
        #expect(try f.store.read { try $0.indexes() } == [Self.media])
    }

    @Test("an index defined in a transaction indexes the objects already there")
    func definedInTransaction() throws {
        let f = try Fixture()
        try put(f, ref("videos", "v1"), ["duration": 90, "kind": "film"])
        try put(f, ref("videos", "v2"), ["kind": "clip"])
        // A pooled query connection opened before the definition must see the new table.
        #expect(try f.store.query(clause: "").count == 2)
        let log = ProgressLog()
        try f.store.write { tx in try tx.defineIndex(Self.media, progress: log.callback) }
        #expect(log.all.isEmpty == false)
        #expect(log.all.last?.total == 2)
        let rows = try indexContents(f.store, index: "media")
        #expect(rows[ref("videos", "v1")] == ["duration": 90.0, "kind": "film"])
        #expect(rows[ref("videos", "v2")] == ["duration": nil, "kind": "clip"])
        // Later writes keep it current.
        try put(f, ref("videos", "v2"), ["kind": "clip", "duration": 4.25])
        #expect(try indexContents(f.store, index: "media")[ref("videos", "v2")]?["duration"] == 4.25)
    }

    @Test("a definition made in a failed transaction leaves no index")
    func definitionRollsBack() throws {
        let f = try Fixture()
        _ = expectCode(.danglingEdge) {
            try f.store.write { tx in
                try tx.defineIndex(Self.media)
                try tx.put(ref("videos", "v1"), value: ["duration": 1])
                try tx.addEdge(
                    name: "to", source: ref("videos", "v1"), destination: .object(ref("x", "ghost")), rules: [])
            }
        }
        #expect(try f.store.read { try $0.indexes() }.isEmpty)
        #expect(expectCode(.notFound) { try f.store.query(index: "media", clause: "") } != nil)
        #expect(!(try schemaNames(f.dbPath, type: "table")).contains("index_media"))
    }

    struct TypeCase: Sendable, CustomTestStringConvertible {
        var type: IndexColumnType
        var value: JSONValue
        var stored: JSONValue
        var testDescription: String { "\(type.rawValue) column given \(value) stores \(stored)" }
    }

    static let typeCases: [TypeCase] = [
        TypeCase(type: .integer, value: 42, stored: 42),
        TypeCase(type: .integer, value: -7, stored: -7),
        TypeCase(type: .integer, value: .int(9_007_199_254_740_993), stored: .int(9_007_199_254_740_993)),
        TypeCase(type: .integer, value: "42", stored: nil),
        TypeCase(type: .integer, value: true, stored: nil),
        TypeCase(type: .integer, value: [1], stored: nil),
        TypeCase(type: .real, value: 2.5, stored: 2.5),
        TypeCase(type: .real, value: 3, stored: 3.0),
        TypeCase(type: .real, value: "2.5", stored: nil),
        TypeCase(type: .real, value: false, stored: nil),
        TypeCase(type: .text, value: "hello", stored: "hello"),
        TypeCase(type: .text, value: "", stored: ""),
        TypeCase(type: .text, value: 12, stored: nil),
        TypeCase(type: .text, value: ["a": "b"], stored: nil),
        TypeCase(type: .boolean, value: true, stored: 1),
        TypeCase(type: .boolean, value: false, stored: 0),
        TypeCase(type: .boolean, value: 1, stored: nil),
        TypeCase(type: .boolean, value: "true", stored: nil),
    ]

    @Test("each column type stores values of its JSON type and NULL for any other", arguments: typeCases)
    func columnTypes(_ c: TypeCase) throws {
        // A second, always-set column keeps the row present when the tested one is NULL.
        let def = IndexDefinition(
            name: "typed", version: "1", columns: [column("v", c.type, "$.v"), column("tag", .text, "tag")])
        let f = try Fixture { $0.indexes = [def] }
        try put(f, ref("c", "k"), ["v": c.value, "tag": "t"])
        let row = try #require(try indexContents(f.store, index: "typed")[ref("c", "k")])
        #expect(row["v"] == c.stored)
        if !c.stored.isNull {
            // The stored value is usable with a parameter of the same JSON type.
            let hit = try f.store.query(index: "typed", clause: "WHERE v = ?", parameters: [c.value])
            #expect(keys(hit) == ["k"])
        }
    }

    @Test("columns come from nested JSON paths, array elements and top-level names")
    func jsonPaths() throws {
        let def = IndexDefinition(
            name: "paths", version: "1",
            columns: [
                column("deep", .text, "$.a.b"), column("top", .integer, "n"), column("second", .text, "$.list[1]"),
                column("odd", .text, "$.\"odd key\""), column("dotted", .text, "x.y"),
            ])
        let f = try Fixture { $0.indexes = [def] }
        try put(
            f, ref("c", "k"),
            [
                "a": ["b": "deep value"], "n": 5, "list": ["zero", "one"], "odd key": "odd", "x.y": "literal dot",
                "x": ["y": "not me"],
            ])
        let row = try #require(try indexContents(f.store, index: "paths")[ref("c", "k")])
        #expect(row == ["deep": "deep value", "top": 5, "second": "one", "odd": "odd", "dotted": "literal dot"])
    }

    @Test("collections restricts which objects get rows; absent means every collection")
    func collectionsRestrict() throws {
        let all = IndexDefinition(name: "everything", version: "1", columns: [column("kind", .text, "kind")])
        let f = try Fixture { $0.indexes = [Self.media, all] }
        for c in ["photos", "videos", "docs", "misc"] { try put(f, ref(c, "k"), ["kind": .string(c)]) }
        #expect(Set(try indexContents(f.store, index: "media").keys) == [ref("photos", "k"), ref("videos", "k")])
        #expect(try indexContents(f.store, index: "everything").count == 4)
        // Deleting an object of another collection never touches the restricted index.
        try f.delete(ref("docs", "k"))
        #expect(try indexContents(f.store, index: "media").count == 2)
        #expect(try indexContents(f.store, index: "everything").count == 3)
    }

    @Test(
        "an object whose columns are all null has no row, gains one when a put sets a value, and loses it again (testIssue104)"
    )
    func conditionalRows() throws {
        let f = try Fixture { $0.indexes = [Self.media] }
        try put(f, ref("videos", "v"), ["title": "no indexed fields"])
        try put(f, ref("videos", "w"), ["kind": 5, "duration": "long"])  // wrong types only: all null
        #expect(try indexContents(f.store, index: "media").isEmpty)
        #expect(try f.store.aggregate(index: "media", function: "COUNT(*)") == .value(0))

        try put(f, ref("videos", "v"), ["duration": 3.5])
        #expect(try indexContents(f.store, index: "media") == [ref("videos", "v"): ["duration": 3.5, "kind": nil]])

        try put(f, ref("videos", "v"), ["kind": "clip"])  // the whole row is replaced: duration goes null
        #expect(try indexContents(f.store, index: "media") == [ref("videos", "v"): ["duration": nil, "kind": "clip"]])

        try put(f, ref("videos", "v"), ["title": "nothing again"])
        #expect(try indexContents(f.store, index: "media").isEmpty)
        // The default index still has both objects.
        #expect(try indexContents(f.store).count == 2)
    }

    @Test("a changed version rebuilds the index on reopen and reports progress")
    func versionChangeRebuilds() throws {
        let f = try Fixture { $0.indexes = [Self.media] }
        try put(f, ref("videos", "v1"), ["duration": 10.0, "kind": "clip"])
        try put(f, ref("videos", "v2"), ["duration": 20.0, "kind": "film"])
        try put(f, ref("docs", "d"), ["kind": "pdf"])

        f.store.close()
        var v2 = Self.media
        v2.version = "2026-12-01"
        v2.columns.append(column("width", .integer, "$.w"))
        f.configuration.indexes = [v2]
        let log = ProgressLog()
        f.store = try Store(path: f.dbPath, configuration: f.configuration, progress: log.callback)

        #expect(!log.all.isEmpty, "no progress reported: the index was not rebuilt")
        #expect(log.all.allSatisfy { $0.index == "media" })
        #expect(log.all.last.map { $0.done == $0.total && $0.total == 3 } == true, "\(log.all)")
        let rows = try indexContents(f.store, index: "media")
        #expect(rows[ref("videos", "v1")] == ["duration": 10.0, "kind": "clip", "width": nil])
        #expect(rows.count == 2)
        #expect(try f.store.read { try $0.indexes() } == [v2])
        try put(f, ref("videos", "v3"), ["w": 1920])
        #expect(try indexContents(f.store, index: "media")[ref("videos", "v3")]?["width"] == 1920)
    }

    struct Change: Sendable, CustomTestStringConvertible {
        var what: String
        var apply: @Sendable (inout IndexDefinition) -> Void
        var testDescription: String { what }
    }

    static let changes: [Change] = [
        Change(what: "only the version") { $0.version = "2027-01-01" },
        Change(what: "a column added, same version") { $0.columns.append(column("width", .integer, "w")) },
        Change(what: "a column's type, same version") { $0.columns[0] = column("duration", .integer, "$.duration") },
        Change(what: "a column's path, same version") { $0.columns[1] = column("kind", .text, "$.type") },
        Change(what: "the collections, same version") { $0.collections = nil },
    ]

    @Test(
        "each kind of definition change rebuilds the index on reopen, and rows follow the new definition",
        arguments: changes)
    func definitionChangeRebuilds(_ change: Change) throws {
        let f = try Fixture { $0.indexes = [Self.media] }
        try put(f, ref("videos", "v"), ["duration": 7, "kind": "clip", "type": "movie", "w": 640])
        try put(f, ref("docs", "d"), ["kind": "pdf", "type": "text"])
        f.store.close()
        var changed = Self.media
        change.apply(&changed)
        f.configuration.indexes = [changed]
        let log = ProgressLog()
        f.store = try Store(path: f.dbPath, configuration: f.configuration, progress: log.callback)
        #expect(!log.all.isEmpty, "not rebuilt")
        #expect(try f.store.read { try $0.indexes() } == [changed])
        try expectIndexTruth(
            f.store, universe: [ref("videos", "v"), ref("docs", "d")], userIndexes: [changed], change.what)
    }

    @Test("a changed collection list rebuilds the index on reopen")
    func collectionChangeRebuilds() throws {
        let f = try Fixture { $0.indexes = [Self.media] }
        try put(f, ref("docs", "d"), ["kind": "pdf"])
        try put(f, ref("videos", "v"), ["kind": "clip"])
        f.store.close()
        var wider = Self.media
        wider.collections = ["photos", "videos", "docs"]
        f.configuration.indexes = [wider]
        let log = ProgressLog()
        f.store = try Store(path: f.dbPath, configuration: f.configuration, progress: log.callback)
        #expect(!log.all.isEmpty)
        #expect(Set(try indexContents(f.store, index: "media").keys) == [ref("docs", "d"), ref("videos", "v")])
    }

    @Test("an unchanged definition is not rebuilt on reopen")
    func unchangedNotRebuilt() throws {
        let f = try Fixture { $0.indexes = [Self.media] }
        try put(f, ref("videos", "v1"), ["duration": 10.0])
        let before = try indexContents(f.store, index: "media")
        f.store.close()
        let log = ProgressLog()
        f.store = try Store(path: f.dbPath, configuration: f.configuration, progress: log.callback)
        #expect(log.all.isEmpty, "rebuilt although nothing changed: \(log.all)")
        #expect(try indexContents(f.store, index: "media") == before)
    }

    @Test("redefining an index with the identical definition in a transaction does not rebuild it")
    func identicalRedefineIsNoop() throws {
        let f = try Fixture { $0.indexes = [Self.media] }
        try put(f, ref("videos", "v1"), ["duration": 10.0])
        let log = ProgressLog()
        try f.store.write { tx in try tx.defineIndex(Self.media, progress: log.callback) }
        #expect(log.all.isEmpty)
        #expect(try indexContents(f.store, index: "media").count == 1)
    }

    @Test("an index defined in a transaction survives a reopen without a rebuild")
    func definedIndexPersists() throws {
        let f = try Fixture()
        try put(f, ref("videos", "v1"), ["duration": 10.0])
        try f.store.write { tx in try tx.defineIndex(Self.media) }
        f.store.close()
        let log = ProgressLog()
        f.store = try Store(path: f.dbPath, configuration: f.configuration, progress: log.callback)
        #expect(log.all.isEmpty)
        #expect(try indexContents(f.store, index: "media") == [ref("videos", "v1"): ["duration": 10.0, "kind": nil]])
    }

    @Test("two user indexes with the same column name each get their own SQLite index")
    func qualifiedSQLNames() throws {
        let docs = IndexDefinition(
            name: "docs", version: "1",
            columns: [column("duration", .real, "$.duration"), column("kind", .text, "kind")])
        let f = try Fixture { $0.indexes = [Self.media, docs] }
        try put(f, ref("videos", "v"), ["duration": 5.0, "kind": "clip"])
        let names = try schemaNames(f.dbPath, type: "index")
        for expected in [
            "index_media__c_duration", "index_docs__c_duration", "index_media__c_kind", "index_docs__c_kind",
        ] {
            #expect(names.contains(expected), "sqlite_master has no \(expected): \(names.sorted())")
        }
        #expect(!names.contains("duration") && !names.contains("kind"), "unqualified index names: \(names.sorted())")
        let tables = try schemaNames(f.dbPath, type: "table")
        #expect(tables.isSuperset(of: ["index_media", "index_docs"]))
        #expect(try schemaNames(f.dbPath, type: "view") == ["index_default"])
        // And each index's queries use its own SQLite index.
        for name in ["media", "docs"] {
            let plan = try f.store.explain(index: name, clause: "WHERE duration > ?", parameters: [1])
            #expect(plan.contains { $0.contains("index_\(name)__c_duration") }, "\(name): \(plan)")
        }
    }

    struct InvalidCase: Sendable, CustomTestStringConvertible {
        var why: String
        var def: IndexDefinition
        var testDescription: String { why }
    }

    static let invalidCases: [InvalidCase] = [
        InvalidCase(
            why: "the name default",
            def: IndexDefinition(name: "default", version: "1", columns: [column("a", .text, "a")])),
        InvalidCase(
            why: "a name with a space",
            def: IndexDefinition(name: "my index", version: "1", columns: [column("a", .text, "a")])),
        InvalidCase(
            why: "a name with a quote",
            def: IndexDefinition(name: "x\"y", version: "1", columns: [column("a", .text, "a")])),
        InvalidCase(
            why: "a name starting with a digit",
            def: IndexDefinition(name: "1st", version: "1", columns: [column("a", .text, "a")])),
        InvalidCase(
            why: "an empty name", def: IndexDefinition(name: "", version: "1", columns: [column("a", .text, "a")])),
        InvalidCase(why: "no columns", def: IndexDefinition(name: "empty", version: "1", columns: [])),
        InvalidCase(
            why: "the reserved column key",
            def: IndexDefinition(name: "r", version: "1", columns: [column("key", .text, "a")])),
        InvalidCase(
            why: "the reserved column collection",
            def: IndexDefinition(name: "r", version: "1", columns: [column("collection", .text, "a")])),
        InvalidCase(
            why: "the reserved column rowid in capitals",
            def: IndexDefinition(name: "r", version: "1", columns: [column("ROWID", .integer, "a")])),
        InvalidCase(
            why: "the reserved column object_id",
            def: IndexDefinition(name: "r", version: "1", columns: [column("object_id", .integer, "a")])),
        InvalidCase(
            why: "a duplicate column",
            def: IndexDefinition(
                name: "d", version: "1", columns: [column("a", .text, "a"), column("A", .integer, "b")])),
        InvalidCase(
            why: "a column name with a bracket",
            def: IndexDefinition(name: "b", version: "1", columns: [column("a]b", .text, "a")])),
    ]

    @Test(
        "an invalid definition is refused with invalid_params, in a transaction and in the configuration",
        arguments: invalidCases)
    func invalidDefinitions(_ c: InvalidCase) throws {
        let f = try Fixture()
        let inTx = expectCode(.invalidParams) { try f.store.write { tx in try tx.defineIndex(c.def) } }
        #expect(inTx != nil)
        #expect(try f.store.read { try $0.indexes() }.isEmpty)
        f.store.close()
        var config = f.configuration
        config.indexes = [c.def]
        let atOpen = expectCode(.invalidParams) { try Store(path: f.dbPath, configuration: config).close() }
        #expect(atOpen != nil)
        f.store = try Store(path: f.dbPath, configuration: f.configuration)
    }

    // SQLite compares table and index names without case, and the built-in index's table is
    // index_default. Each definition below is a plausible identifier; it must either work on
    // its own table and SQLite indexes, or be refused with invalid_params, and never damage the
    // built-in index or another index.
    struct NamingCase: Sendable, CustomTestStringConvertible {
        var why: String
        var defs: [IndexDefinition]
        var testDescription: String { why }
    }

    static let namingCases: [NamingCase] = [
        NamingCase(
            why: "the name Default, which differs from default only in case",
            defs: [
                IndexDefinition(name: "Default", version: "1", columns: [column("x", .integer, "x")])
            ]),
        NamingCase(
            why: "the name DEFAULT",
            defs: [
                IndexDefinition(name: "DEFAULT", version: "1", columns: [column("owner", .text, "x")])
            ]),
        NamingCase(
            why: "two names that differ only in case",
            defs: [
                IndexDefinition(name: "media", version: "1", columns: [column("x", .integer, "x")]),
                IndexDefinition(name: "Media", version: "1", columns: [column("y", .text, "y")]),
            ]),
        NamingCase(
            why: "the name definition, once the engine's own index_definition table",
            defs: [
                IndexDefinition(name: "definition", version: "1", columns: [column("x", .integer, "x")])
            ]),
        NamingCase(
            why: "a column named collection_key, like the engine's own (collection, key) index",
            defs: [
                IndexDefinition(name: "m", version: "1", columns: [column("collection_key", .integer, "x")])
            ]),
        NamingCase(
            why: "index a with column b__c beside index a__b with column c",
            defs: [
                IndexDefinition(name: "a", version: "1", columns: [column("b__c", .integer, "x")]),
                IndexDefinition(name: "a__b", version: "1", columns: [column("c", .integer, "x")]),
            ]),
        NamingCase(
            why: "a column named like an SQL keyword",
            defs: [
                IndexDefinition(
                    name: "g", version: "1", columns: [column("group", .integer, "x"), column("select", .text, "y")])
            ]),
    ]

    @Test(
        "an index name or column that collides in SQL is refused with invalid_params or works on its own, never harming others",
        arguments: namingCases)
    func namingCollisions(_ c: NamingCase) throws {
        let f = try Fixture()
        try put(f, ref("m", "a"), ["x": 1, "y": "one", "owner": "alice"])
        var defined = [IndexDefinition]()
        for def in c.defs {
            do {
                try f.store.write { tx in try tx.defineIndex(def) }
                defined.append(def)
            } catch let e as StoreError {
                #expect(e.code == .invalidParams, "defining \(def.name): \(e)")
            }
        }
        // The store still takes writes, and every index still equals a recomputation.
        #expect(throws: Never.self, "a write after defining \(defined.map(\.name))") {
            try put(f, ref("m", "b"), ["x": 2, "y": "two", "owner": "bob"])
        }
        try expectIndexTruth(f.store, universe: [ref("m", "a"), ref("m", "b")], userIndexes: defined, c.why)
        #expect(try f.store.read { try $0.indexes() }.map(\.name).sorted() == defined.map(\.name).sorted())
        // And it survives a reopen with the same definitions in the configuration.
        f.store.close()
        f.configuration.indexes = defined
        let log = ProgressLog()
        f.store = try Store(path: f.dbPath, configuration: f.configuration, progress: log.callback)
        #expect(log.all.isEmpty, "rebuilt on reopen: \(log.all)")
        try expectIndexTruth(
            f.store, universe: [ref("m", "a"), ref("m", "b")], userIndexes: defined, c.why + ", reopened")
    }

    @Test(
        "an index configured under a colliding name is refused with invalid_params or opens and works",
        arguments: namingCases)
    func namingCollisionsInConfiguration(_ c: NamingCase) throws {
        let f = try Fixture()
        try put(f, ref("m", "a"), ["x": 1, "y": "one"])
        f.store.close()
        var config = f.configuration
        config.indexes = c.defs
        do {
            f.store = try Store(path: f.dbPath, configuration: config)
        } catch let e as StoreError {
            #expect(e.code == .invalidParams, "opening with \(c.defs.map(\.name)): \(e)")
            f.store = try Store(path: f.dbPath, configuration: f.configuration)
            try expectIndexTruth(f.store, universe: [ref("m", "a")], c.why + ", refused")
            return
        }
        #expect(throws: Never.self) { try put(f, ref("m", "b"), ["x": 2, "y": "two"]) }
        try expectIndexTruth(f.store, universe: [ref("m", "a"), ref("m", "b")], userIndexes: c.defs, c.why)
    }

    static let invalidJSON: [(String, JSONValue)] = [
        ("an unknown type", ["name": "u", "columns": [["name": "a", "type": "blob", "path": "a"]]]),
        ("a bad path", ["name": "u", "columns": [["name": "a", "type": "text", "path": "$.a["]]]),
        ("no name", ["columns": [["name": "a", "type": "text", "path": "a"]]]),
        ("a column without a type", ["name": "u", "columns": [["name": "a", "path": "a"]]]),
        ("the reserved column key", ["name": "u", "columns": [["name": "key", "type": "text", "path": "a"]]]),
        (
            "collections not strings",
            ["name": "u", "collections": [1], "columns": [["name": "a", "type": "text", "path": "a"]]]
        ),
    ]

    @Test("an invalid [[indexes]] entry is refused with invalid_params", arguments: invalidJSON)
    func invalidJSONDefinitions(_ why: String, _ json: JSONValue) {
        #expect(expectCode(.invalidParams) { try IndexDefinition(json: json) } != nil, "\(why)")
    }

    @Test("a definition round-trips through its JSON form")
    func jsonRoundTrip() throws {
        #expect(try IndexDefinition(json: Self.media.json) == Self.media)
    }

    @Test("querying an index that does not exist is not_found")
    func unknownIndex() throws {
        let f = try Fixture()
        #expect(expectCode(.notFound) { try f.store.query(index: "nope", clause: "") } != nil)
        #expect(expectCode(.notFound) { try f.store.aggregate(index: "nope", function: "COUNT(*)") } != nil)
        #expect(expectCode(.notFound) { try f.store.explain(index: "nope", clause: "") } != nil)
    }
}
