// The built-in index's size and files, now columns of the object kept by the index refresh,
// on the paths where a new object skips the file lookup (`fileless`) or an id comes back:
// written in review of the change that made the index a view.

import Foundation
import Testing
@testable import AssetStore
import AssetStoreTestSupport

@Suite struct DefaultIndexUpkeepTests {
    struct Boom: Error {}

    @Test(
        "put again, rolled-back attempts reusing an id, a grown file, removed edges and a rebuild keep size and files true"
    )
    func scenarios() throws {
        let f = try Fixture()
        let a = try f.makeFile("a.bin", size: 100)
        let b = try f.makeFile("b.bin", size: 20)
        var universe: Set<ObjectRef> = [ref("m", "x"), ref("m", "y"), ref("m", "z"), ref("m", "w")]
        try f.store.write { tx in try tx.put(ref("m", "x"), value: ["file": .string(a)]) }
        try expectIndexTruth(f.store, universe: universe, "put")
        // deleted and put again in one transaction, with a flush between (new id), no file then with file
        try f.store.write { tx in
            try tx.delete(ref("m", "x"))
            try tx.flush()
            try tx.put(ref("m", "x"), value: ["file": .string(b)])
        }
        try expectIndexTruth(f.store, universe: universe, "delete, flush, put again")
        // deleted and put again without a flush: an update
        try f.store.write { tx in
            try tx.delete(ref("m", "x"))
            try tx.put(ref("m", "x"), value: ["k": 1])
        }
        try expectIndexTruth(f.store, universe: universe, "delete, put again")
        // attempt with a flush inside, rolled back, id reused
        try f.store.write { tx in
            _ = try? tx.attempt { () throws -> Void in
                try tx.put(ref("m", "y"), value: ["file": .string(a)])
                try tx.flush()
                throw Boom()
            }
            try tx.put(ref("m", "z"), value: ["k": 2])
            try tx.addEdge(
                name: "f", source: ref("m", "z"), destination: .file(b), rules: .deleteDestinationIfAllSourcesDeleted)
        }
        try expectIndexTruth(f.store, universe: universe, "attempt rolled back")
        try f.store.write { tx in
            _ = try? tx.attempt { () throws -> Void in
                try tx.put(ref("m", "w"), value: ["file": .string(a)])
                try tx.flush()
                throw Boom()
            }
            try tx.put(ref("m", "y"), value: ["k": 2])
        }
        try expectIndexTruth(f.store, universe: universe, "attempt rolled back 2")
        // a file grows; touch re-measures
        try Data(count: 500).write(to: URL(fileURLWithPath: b))
        try f.store.write { tx in try tx.touch(ref("m", "z")) }
        try expectIndexTruth(f.store, universe: universe, "touch")
        // an edge removed
        try f.store.write { tx in
            _ = try tx.removeEdge(name: "f", source: ref("m", "z"), destination: .file(b))
        }
        try expectIndexTruth(f.store, universe: universe, "edge removed")
        universe.insert(ref("m", "v"))
        // new object, edge added then removed in the same transaction
        try f.store.write { tx in
            try tx.put(ref("m", "v"), value: ["k": 3])
            try tx.addEdge(name: "f", source: ref("m", "v"), destination: .file(a), rules: [])
            try tx.flush()
            _ = try tx.removeEdge(name: "f", source: ref("m", "v"), destination: .file(a))
        }
        try expectIndexTruth(f.store, universe: universe, "edge added and removed")
        try f.store.write { tx in try tx.rebuildIndex("default") }
        try expectIndexTruth(f.store, universe: universe, "rebuild")
    }

    // A new object that declares no edge, with no user index, is not recorded for the flush
    // at all (nothing to derive, its built-in row is already right): whatever the same
    // transaction does to it afterwards must still leave every index true.
    @Test("a new object declaring nothing, then given files, put again, indexed or rolled back in one transaction")
    func newObjectDeclaringNothing() throws {
        let f = try Fixture()
        let a = try f.makeFile("a.bin", size: 100)
        let b = try f.makeFile("b.bin", size: 20)
        let byDepth = IndexDefinition(name: "depth", version: "1", columns: [column("n", .integer, "n")])
        let universe: Set<ObjectRef> = [
            ref("m", "put-again"), ref("m", "edge"), ref("m", "indexed"), ref("m", "gone"), ref("m", "kept"),
        ]
        try f.store.write { tx in
            try tx.put(ref("m", "put-again"), value: ["n": 1])
            try tx.put(ref("m", "put-again"), value: ["n": 2, "file": .string(a)])
            try tx.put(ref("m", "edge"), value: ["n": 3])
            try tx.addEdge(
                name: "f", source: ref("m", "edge"), destination: .file(b), rules: .deleteDestinationIfAllSourcesDeleted
            )
            try tx.put(ref("m", "gone"), value: ["n": 4])
            try tx.delete(ref("m", "gone"))
            _ = try? tx.attempt { () throws -> Void in
                try tx.put(ref("m", "kept"), value: ["n": 5])
                throw Boom()
            }
            try tx.put(ref("m", "kept"), value: ["n": 6])
            try tx.put(ref("m", "indexed"), value: ["n": 7])
            try tx.defineIndex(byDepth)
        }
        try expectIndexTruth(f.store, universe: universe, userIndexes: [byDepth], "one transaction")
        let got = try f.store.read { tx in
            try ["put-again", "edge", "gone", "kept"].map { try tx.get(ref("m", $0)) }
        }
        #expect(got[0]?.files.map(\.path) == [a])
        #expect(got[1]?.files.map(\.path) == [b])
        #expect(got[2] == nil)
        #expect(got[3]?.value == ["n": 6])
        // With the user index defined, a new object gets its row there.
        try f.store.write { tx in try tx.put(ref("m", "gone"), value: ["n": 8]) }
        try expectIndexTruth(f.store, universe: universe, userIndexes: [byDepth], "after the index")
    }
}
