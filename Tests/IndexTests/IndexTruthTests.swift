// Index truth (I5 in these tests): after puts, deletes with cascades, touches, manual file edges,
// nullified fields and restarts, every index equals a recomputation from the objects as `get`
// returns them, and deleted objects have no rows. Scripted first, then seeded random mixes.

import GRDB
import Testing
import AssetStore
import AssetStoreTestSupport

@Suite struct IndexTruthTests {
    static let media = IndexDefinition(
        name: "media", version: "1", collections: ["tracks", "photos", "thumbs"],
        columns: [
            column("duration", .real, "$.duration"),
            column("kind", .text, "kind"),
            column("rating", .integer, "$.meta.rating"),
            column("hd", .boolean, "hd"),
            column("orig", .text, "orig"),
        ])

    /// Albums delete their tracks; thumbs name a photo and lose the name when it goes.
    static func templates(_ tx: WriteTransaction) throws {
        try tx.setTemplate(
            collection: "albums",
            edges: [
                EdgeTemplate(
                    name: "track", field: JSONPath("tracks")!, to: .collection("tracks"),
                    rules: .deleteDestinationIfSourceDeleted)
            ])
        try tx.setTemplate(
            collection: "thumbs",
            edges: [
                EdgeTemplate(
                    name: "original", field: JSONPath("orig")!, to: .collection("photos"),
                    rules: .notifyIfDestinationDeleted)
            ])
    }

    @Test("after a scripted mix of operations and a restart, every index equals a recomputation")
    func scriptedMix() throws {
        let f = try Fixture { $0.indexes = [Self.media] }
        var universe = Set<ObjectRef>()
        func check(_ step: String) throws {
            try expectIndexTruth(f.store, universe: universe, userIndexes: [Self.media], step)
        }
        let t1 = try f.makeFile("t/1.flac", size: 1_000)
        let t2 = try f.makeFile("t/2.flac", size: 2_000)
        let t3 = try f.makeFile("t/3.flac", size: 3_000)
        let shared = try f.makeFile("shared/cover.jpg", size: 55)
        let photo = try f.makeFile("p/1.jpg", size: 400)
        let later = f.root + "/p/later.jpg"

        try f.store.write { tx in try Self.templates(tx) }
        try f.store.write(owner: "alice") { tx in
            for (k, p, d) in [("t1", t1, 61.5), ("t2", t2, 120.0), ("t3", t3, 30.25)] {
                try tx.put(
                    ref("tracks", k),
                    value: [
                        "file": [.string(p), .string(shared)], "duration": .double(d), "kind": "audio",
                        "meta": ["rating": 4],
                    ])
            }
            try tx.put(ref("albums", "a1"), value: ["tracks": ["t1", "t2"], "owner": "bob", "file": .string(shared)])
            try tx.put(ref("photos", "p1"), value: ["file": .string(photo), "kind": "image", "hd": true])
            try tx.put(ref("photos", "p2"), value: ["file": .string(later), "hd": false, "meta": ["rating": "five"]])
            try tx.put(ref("thumbs", "th1"), value: ["orig": "p1"])
            try tx.put(ref("thumbs", "th2"), value: ["orig": "p2", "kind": "thumb"])
            try tx.put(ref("other", "o1"), value: ["kind": "not indexed by media", "duration": 5])
        }
        universe.formUnion([
            ref("tracks", "t1"), ref("tracks", "t2"), ref("tracks", "t3"), ref("albums", "a1"),
            ref("photos", "p1"), ref("photos", "p2"), ref("thumbs", "th1"), ref("thumbs", "th2"), ref("other", "o1"),
        ])
        try check("initial puts")

        f.clock.advance(60)
        try f.store.write { tx in
            try tx.touch(ref("tracks", "t3"))
            try tx.addEdge(name: "preview", source: ref("other", "o1"), destination: .file(t3), rules: [])
        }
        try check("touch and manual file edge")

        f.clock.advance(60)
        try f.delete(ref("albums", "a1"))  // cascades to t1 and t2
        #expect(try !f.exists(ref("tracks", "t1")))
        #expect(try !f.exists(ref("tracks", "t2")))
        try check("album deleted with its tracks")

        f.clock.advance(60)
        try f.delete(ref("photos", "p1"))  // th1 loses its "orig": all its media columns go null
        #expect(try f.store.read { try $0.get(ref("thumbs", "th1")) }?.value["orig"] == .null)
        try check("photo deleted and thumb nullified")

        try f.makeFile("p/later.jpg", size: 4_096)
        f.clock.advance(60)
        try f.store.write { tx in try tx.touch(ref("photos", "p2")) }
        try check("a missing file appeared and was touched")

        try f.store.write { tx in
            try tx.put(ref("tracks", "t3"), value: ["duration": 31, "kind": 7])  // file edges go, kind wrong type
            try tx.addEdge(
                name: "kill", source: ref("thumbs", "th2"), destination: .file(t3),
                rules: .deleteDestinationIfSourceDeleted)
        }
        try check("re-put without files")

        try f.delete(ref("thumbs", "th2"))  // deletes t3 (file): o1's manual edge goes as destination deleted
        try check("file deleted by a rule")

        // A template file field other than `file`, then a template change that drops it.
        let poster = try f.makeFile("art/poster.png", size: 2_500)
        let trailer = try f.makeFile("art/trailer.mp4", size: 9_000)
        try f.store.write { tx in
            try tx.setTemplate(
                collection: "movies",
                edges: [
                    EdgeTemplate(
                        name: "poster", field: JSONPath("$.art.poster")!, to: .file,
                        rules: .deleteDestinationIfAllSourcesDeleted)
                ])
            try tx.put(ref("movies", "mv"), value: ["art": ["poster": .string(poster)], "file": .string(trailer)])
        }
        universe.insert(ref("movies", "mv"))
        try check("a template file field beside the built-in one")
        try f.store.write { tx in
            try tx.setTemplate(
                collection: "movies",
                edges: [
                    EdgeTemplate(
                        name: "poster", field: JSONPath("file")!, to: .file, rules: .deleteDestinationIfSourceDeleted)
                ])
        }
        try check("the template changed: the poster field no longer derives an edge")

        try f.reopen()
        try check("after reopen")

        f.clock.advance(60)
        try f.store.write { tx in
            try tx.put(ref("tracks", "t1"), value: ["duration": 1.5, "file": .string(shared)])
            try tx.delete(ref("other", "o1"))
        }
        try check("after reopen, more writes")
    }

    @Test(
        "the truth check notices a wrong value, a missing row and a stray row",
        arguments: [
            // The built-in index's own columns (its other columns are the object's).
            "UPDATE object SET size = size + 1 WHERE key = 'a'",
            "UPDATE object SET files = 0 WHERE key = 'a'",
            "UPDATE object SET size = 3 WHERE key = 'b'",
            "UPDATE index_media SET kind = 'other' WHERE key = 'a'",
            "DELETE FROM index_media",
            "INSERT INTO index_media (object_id, collection, key, hd) SELECT object_id, collection, key, 1 FROM index_default WHERE key = 'b'",
        ])
    func truthCheckCanFail(_ corruption: String) throws {
        let f = try Fixture { $0.indexes = [Self.media] }
        let p = try f.makeFile("a.bin", size: 10)
        try f.store.write { tx in
            try tx.put(ref("photos", "a"), value: ["file": .string(p), "kind": "image"])
            try tx.put(ref("other", "b"), value: ["kind": "not in media"])
        }
        let universe = [ref("photos", "a"), ref("other", "b")]
        #expect(try indexDifferences(f.store, universe: universe, userIndexes: [Self.media]).isEmpty)
        let q = try DatabaseQueue(path: f.dbPath)
        try q.write { db in try db.execute(sql: corruption) }
        try q.close()
        #expect(try !indexDifferences(f.store, universe: universe, userIndexes: [Self.media]).isEmpty)
        // A rebuild repairs it.
        try f.store.write { tx in
            try tx.rebuildIndex(IndexDefinition.defaultName)
            try tx.rebuildIndex("media")
        }
        #expect(try indexDifferences(f.store, universe: universe, userIndexes: [Self.media]).isEmpty)
    }

    @Test(
        "after seeded random operations, default and user indexes equal a recomputation", arguments: [1, 2, 3, 4, 5, 6])
    func randomMix(seed: UInt64) throws {
        let f = try Fixture { $0.indexes = [Self.media] }
        try f.store.write { tx in try Self.templates(tx) }
        var rng = SplitMix(seed: seed)
        let files = try (0..<6).map { try f.makeFile("r/\($0).bin", size: 10 * ($0 + 1)) }
        let collections = ["tracks", "photos", "thumbs", "albums", "other"]
        let keys = ["a", "b", "c", "d"]
        var universe = Set<ObjectRef>()
        for c in collections { for k in keys { universe.insert(ref(c, k)) } }

        func randomValue(_ collection: String) -> JSONValue {
            var o: [String: JSONValue] = [:]
            if rng.chance(0.6) {
                let n = rng.below(3)
                o["file"] = .array((0..<n).map { _ in .string(files[rng.below(files.count)]) })
            }
            if rng.chance(0.5) {
                o["duration"] = rng.chance(0.5) ? .int(Int64(rng.below(100))) : .double(Double(rng.below(1000)) / 8)
            }
            if rng.chance(0.4) { o["kind"] = rng.chance(0.8) ? .string(["audio", "image"][rng.below(2)]) : .int(3) }
            if rng.chance(0.3) { o["hd"] = rng.chance(0.8) ? .bool(rng.chance(0.5)) : "yes" }
            if rng.chance(0.3) { o["meta"] = ["rating": .int(Int64(rng.below(6)))] }
            if rng.chance(0.3) { o["owner"] = .string(["alice", "bob"][rng.below(2)]) }
            return .object(o)
        }

        for step in 0..<60 {
            f.clock.advance(1)
            let c = collections[rng.below(collections.count)]
            let r = ref(c, keys[rng.below(keys.count)])
            let op = rng.below(10)
            let description = "seed \(seed) step \(step) op \(op) on \(r)"
            do {
                try f.store.write(owner: ["x", "y"][rng.below(2)]) { tx in
                    switch op {
                    case 0...3:
                        var v = randomValue(c)
                        // Albums name existing tracks only (a dangling reference fails the commit).
                        if c == "albums" {
                            let present = try keys.filter { try tx.exists(ref("tracks", $0)) }
                            if var o = v.objectValue {
                                o["tracks"] = .array(present.filter { _ in rng.chance(0.5) }.map(JSONValue.string))
                                v = .object(o)
                            }
                        }
                        if c == "thumbs", let photo = try keys.first(where: { try tx.exists(ref("photos", $0)) }),
                            var o = v.objectValue
                        {
                            o["orig"] = .string(photo)
                            v = .object(o)
                        }
                        try tx.put(r, value: v, owner: rng.chance(0.5) ? "argument" : nil)
                    case 4, 5:
                        if try tx.exists(r) { try tx.delete(r) }
                    case 6:
                        if try tx.exists(r) { try tx.touch(r) }
                    case 7:
                        if try tx.exists(r) {
                            let rules: DeleteRules = rng.chance(0.3) ? .deleteDestinationIfSourceDeleted : []
                            try tx.addEdge(
                                name: "m\(rng.below(2))", source: r, destination: .file(files[rng.below(files.count)]),
                                rules: rules)
                        }
                    case 8:
                        // A file changes on disk; the next put or touch of a holder sees it.
                        try f.makeFile("r/\(rng.below(files.count)).bin", size: rng.below(500))
                        if try tx.exists(r) { try tx.touch(r) }
                    default:
                        try tx.flush()
                    }
                }
            } catch let e as StoreError where e.code == .deleteDenied || e.code == .danglingEdge {
                // A refused transaction is fine; it must leave the indexes untouched (checked below).
            }
            try expectIndexTruth(f.store, universe: universe, userIndexes: [Self.media], description)
            if step % 25 == 24 { try f.reopen() }
        }
    }
}

/// A small deterministic generator so a failing seed replays exactly.
struct SplitMix {
    var state: UInt64
    init(seed: UInt64) { state = seed &* 0x9E37_79B9_7F4A_7C15 }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
    mutating func below(_ n: Int) -> Int { Int(next() % UInt64(n)) }
    mutating func chance(_ p: Double) -> Bool { Double(next() % 1_000_000) / 1_000_000 < p }
}
