// The point read lists an object's files only when its row's `files` count says it holds
// some (Store+PointRead.swift): every way a file edge comes or goes must keep that count in
// the same transaction, or object.get would omit a held file.

@testable import AssetStore
import AssetStoreTestSupport
import Foundation
import GRDB
import Testing

@Suite struct PointReadFilesTests {
    /// Every object read through a PointReader prints what the general read prints.
    private func expectSameReads(_ f: Fixture, _ reader: PointReader, _ step: String) throws {
        let refs = try f.store.read { r in
            try Row.fetchAll(r.db, sql: "SELECT collection, key FROM object ORDER BY id").map {
                ref($0[0] as String, $0[1] as String)
            }
        }
        for r in refs {
            let general = try #require(try f.store.read { try $0.get(r) }).json.serialized()
            let fast = try #require(try reader.objectJSON(r))
            #expect(String(decoding: fast, as: UTF8.self) == general, "\(step): \(r)")
        }
    }

    @Test("new objects, pending edges, flushes, templates and cascades: every read lists the held files")
    func filesCountFollowsEveryPath() throws {
        let f = try Fixture()
        let paths = try (0..<4).map { try f.makeFile("p/\($0)", size: 10 + $0) }
        let reader = try PointReader(store: f.store)
        // One transaction: a new object given an edge after a flush, an edge named before
        // its source existed, a new object naming a file in its value.
        try f.store.write { tx in
            try tx.put(ref("c", "plain"), value: [:])
            try tx.addEdge(name: "e", source: ref("c", "later"), destination: .file(paths[0]), rules: [])
            try tx.put(ref("c", "named"), value: ["file": .string(paths[1])])
            try tx.flush()
            try tx.addEdge(name: "e", source: ref("c", "plain"), destination: .file(paths[2]), rules: [])
            try tx.put(ref("c", "later"), value: [:])
        }
        try expectSameReads(f, reader, "one transaction")
        // A template declared after its objects derives their file edges.
        try f.store.write { try $0.put(ref("t", "k"), value: ["f": .string(paths[3])]) }
        try f.setTemplate("t", templateEdge("f", field: "$.f", to: "file", []))
        try expectSameReads(f, reader, "template")
        // A cascade: the file goes with its first holder, and the other loses its edge.
        try f.addEdge("own", ref("c", "later"), .file(paths[2]), .deleteDestinationIfSourceDeleted)
        try f.store.write { try $0.delete(ref("c", "later")) }
        try expectSameReads(f, reader, "cascade")
        let held = try f.store.read { r in
            try Int.fetchOne(r.db, sql: "SELECT COUNT(*) FROM index_default WHERE files > 0")
        }
        #expect(held == 2, "named and t/k hold a file; plain's went with the cascade")
    }
}
