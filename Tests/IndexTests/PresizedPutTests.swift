// A new object is inserted with the size and file count its probes give (HeldFiles), and the
// index refresh writes its row again only where the registry says otherwise: here the two
// must agree in every case the refresh distinguishes, and a row is rewritten exactly where
// the inserted figures were not the final ones. A temporary trigger on the writer's
// connection records each rewrite of an object's size or files.

import Foundation
import Testing
@testable import AssetStore
import AssetStoreTestSupport

@Suite struct PresizedPutTests {
    struct Boom: Error {}

    /// Records in `temp.rewrites` the id of every object row whose size or files is written.
    static func recordRewrites(_ tx: WriteTransaction) throws {
        try tx.db.execute(
            sql: """
                CREATE TEMP TABLE IF NOT EXISTS rewrites (id INTEGER);
                DELETE FROM temp.rewrites;
                CREATE TEMP TRIGGER IF NOT EXISTS record_rewrite AFTER UPDATE OF size, files ON main.object
                BEGIN INSERT INTO rewrites VALUES (new.id); END;
                """)
    }

    /// The keys (collection `m`) of the rows rewritten since `recordRewrites`.
    static func rewritten(_ tx: WriteTransaction) throws -> Set<String> {
        Set(
            try String.fetchAll(
                tx.db, sql: "SELECT o.key FROM temp.rewrites r JOIN object o ON o.id = r.id"))
    }

    /// Each key's (size, files) as the built-in index shows it.
    static func sizes(_ store: Store) throws -> [String: [Int64]] {
        var out = [String: [Int64]]()
        for row in try store.query(clause: "ORDER BY key", include: .rows) {
            out[row.ref.key] = [row.columns?["size"]?.intValue ?? -1, row.columns?["files"]?.intValue ?? -1]
        }
        return out
    }

    /// The problems verify finds, but for files not there (which the tests name on purpose).
    static func problems(_ store: Store) throws -> [String] {
        try store.verify(VerifyOptions()).problems.filter { $0.kind != "missing_file" }.map(\.message)
    }

    @Test("shared files, a file named twice, a missing one and paths equal only as Strings need no rewrite")
    func insertedRight() throws {
        let f = try Fixture()
        let a = try f.makeFile("a.bin", size: 100)
        let b = try f.makeFile("b.bin", size: 20)
        // The same name as Swift Strings (canonical equivalence), two files on disk.
        let composed = try f.makeFile("caf\u{E9}.bin", size: 30)
        let decomposed = try f.makeFile("cafe\u{301}.bin", size: 40)
        let missing = f.root + "/not-yet.bin"
        var many = [JSONValue]()
        for i in 0..<(HeldFiles.compared + 4) {
            many.append(.string(try f.makeFile("many/\(i % 10).bin", size: i % 10)))
        }
        let rewritten = try f.store.write { tx in
            try Self.recordRewrites(tx)
            try tx.put(ref("m", "one"), value: ["file": .string(a)])
            try tx.put(ref("m", "shares"), value: ["file": .string(a)])
            try tx.put(ref("m", "twice"), value: ["file": [.string(b), .string(b)]])
            try tx.put(ref("m", "missing"), value: ["file": .string(missing)])
            try tx.put(ref("m", "accents"), value: ["file": [.string(composed), .string(decomposed)]])
            try tx.put(ref("m", "many"), value: ["file": .array(many)])
            try tx.put(ref("m", "none"), value: ["k": 1])
            try tx.flush()
            return try Self.rewritten(tx)
        }.value
        #expect(
            try Self.sizes(f.store) == [
                "one": [100, 1], "shares": [100, 1], "twice": [20, 1], "missing": [0, 1], "accents": [70, 2],
                "many": [45, 10], "none": [0, 0],
            ])
        // Past the pairwise comparison the refresh counts, and writes the row.
        #expect(rewritten == ["many"])
        try expectIndexTruth(
            f.store, universe: ["one", "shares", "twice", "missing", "accents", "many", "none"].map { ref("m", $0) },
            "one transaction")
        #expect(try Self.problems(f.store) == [])
    }

    @Test("a replaced object, a file that grew between two puts, a file named and then not, and a user index")
    func refreshedWhereDifferent() throws {
        let byN = IndexDefinition(name: "by_n", version: "1", columns: [column("n", .integer, "n")])
        let f = try Fixture { $0.indexes = [byN] }
        let a = try f.makeFile("a.bin", size: 100)
        let b = try f.makeFile("b.bin", size: 20)
        let c = try f.makeFile("c.bin", size: 10)
        try f.store.write { tx in try tx.put(ref("m", "x"), value: ["n": 1, "file": .string(a)]) }
        let rewritten = try f.store.write { tx in
            try Self.recordRewrites(tx)
            try tx.put(ref("m", "x"), value: ["n": 2, "file": .string(b)])
            try tx.put(ref("m", "early"), value: ["n": 3, "file": .string(c)])
            try Data(count: 50).write(to: URL(fileURLWithPath: c))
            // Probes 50: the registry row ends at 50, so the earlier holder is refreshed.
            try tx.put(ref("m", "late"), value: ["n": 4, "file": .string(c)])
            // Inserted naming a file, put again naming none: never given a file edge.
            try tx.put(ref("m", "dropped"), value: ["n": 5, "file": .string(a)])
            try tx.put(ref("m", "dropped"), value: ["n": 6])
            try tx.flush()
            return try Self.rewritten(tx)
        }.value
        #expect(try Self.sizes(f.store) == ["x": [20, 1], "early": [50, 1], "late": [50, 1], "dropped": [0, 0]])
        #expect(rewritten == ["x", "early", "dropped"])
        try expectIndexTruth(
            f.store, universe: ["x", "early", "late", "dropped"].map { ref("m", $0) }, userIndexes: [byN],
            "after the puts")
        let byNRows = try f.store.query(index: "by_n", clause: "WHERE n >= 2 ORDER BY n").map(\.ref.key)
        #expect(byNRows == ["x", "early", "late", "dropped"])
        #expect(try Self.problems(f.store) == [])
    }

    @Test("an id given out again after a rolled-back put does not keep the first object's figures")
    func idReused() throws {
        let f = try Fixture()
        let a = try f.makeFile("a.bin", size: 100)
        try f.store.write { tx in
            try tx.setTemplate(
                collection: "m",
                edges: [
                    EdgeTemplate(
                        name: "peer", field: JSONPath("peer")!, to: .collection("m"), rules: .notifyIfDestinationDeleted
                    )
                ])
            try tx.put(ref("m", "target"), value: ["k": 0])
        }
        let rewritten = try f.store.write { tx in
            try Self.recordRewrites(tx)
            _ = try? tx.attempt { () throws -> Void in
                try tx.put(ref("m", "first"), value: ["file": .string(a)])
                throw Boom()
            }
            // Same id (the savepoint rolled sqlite_sequence back); an object edge, so it is
            // inserted with size and files 0 and the refresh must write 100 and 1.
            try tx.put(ref("m", "second"), value: ["file": .string(a), "peer": "target"])
            try tx.flush()
            return try Self.rewritten(tx)
        }.value
        #expect(try Self.sizes(f.store) == ["target": [0, 0], "second": [100, 1]])
        #expect(rewritten == ["second"])
        try expectIndexTruth(f.store, universe: [ref("m", "target"), ref("m", "second")], "id reused")
        #expect(try Self.problems(f.store) == [])
    }

    @Test("manual file edges before and after the derive, and a file a rule deletes, are counted")
    func edgesAroundTheDerive() throws {
        let f = try Fixture()
        let a = try f.makeFile("a.bin", size: 100)
        let b = try f.makeFile("b.bin", size: 20)
        let c = try f.makeFile("c.bin", size: 7)
        try f.store.write { tx in
            try tx.put(ref("m", "keeper"), value: ["k": 0])
            try tx.addEdge(
                name: "owns", source: ref("m", "keeper"), destination: .file(c),
                rules: .deleteDestinationIfSourceDeleted)
        }
        try f.store.write { tx in
            // Named before its source exists: resolved after the derive, at commit.
            try tx.addEdge(name: "extra", source: ref("m", "later"), destination: .file(b), rules: [])
            try tx.put(ref("m", "later"), value: ["file": .string(a)])
            // Its source exists: added before the derive.
            try tx.put(ref("m", "sooner"), value: ["file": .string(a)])
            try tx.addEdge(name: "extra", source: ref("m", "sooner"), destination: .file(b), rules: [])
            // Its only file goes with the keeper, in the flush that derives it.
            try tx.put(ref("m", "bereft"), value: ["file": .string(c)])
            try tx.delete(ref("m", "keeper"))
        }
        #expect(try Self.sizes(f.store) == ["later": [120, 2], "sooner": [120, 2], "bereft": [0, 0]])
        try expectIndexTruth(f.store, universe: ["later", "sooner", "bereft", "keeper"].map { ref("m", $0) }, "edges")
        #expect(try Self.problems(f.store) == [])
    }
}
