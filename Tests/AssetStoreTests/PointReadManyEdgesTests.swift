// An object's files as object.get lists them, however many edges hold them (Store+FileList.swift):
// on the loop at most Store.loopFileEdges edges are read and an object with more is refused
// for the pool before any access is recorded; off the loop each file comes once, in path
// order, the same bytes as on the loop, and files past the reply limit are refused.

@testable import AssetStore
import AssetStoreTestSupport
import Foundation
import JSON
import Testing

@Suite struct PointReadManyEdgesTests {
    /// Adds `names` edges from `source` to each of `paths`, in one transaction.
    private func addEdges(_ f: Fixture, _ source: ObjectRef, _ paths: [String], names: Int = 1) throws {
        try f.store.write { tx in
            for (i, path) in paths.enumerated() {
                for n in 0..<names {
                    try tx.addEdge(name: "e\(i)-\(n)", source: source, destination: .file(path), rules: [])
                }
            }
        }
    }

    /// The text of `ref` as the general read prints it.
    private func general(_ f: Fixture, _ r: ObjectRef) throws -> String {
        try #require(try f.store.read { try $0.get(r) }).json.serialized()
    }

    @Test("more edges than the loop reads, to one file: refused on the loop with nothing recorded, one file off it")
    func manyEdgesToOneFile() throws {
        let f = try Fixture()
        let path = try f.makeFile("one.bin")
        let k = ref("c", "many")
        try f.store.write { try $0.put(k, value: ["n": 1]) }
        try addEdges(f, k, [path], names: Store.loopFileEdges + 1)
        let reader = try PointReader(store: f.store)
        for reads in [f.store, reader] as [any PointReads] {
            #expect(throws: PointReadOffLoop.self) { _ = try reads.objectJSON(k, touching: .yes, files: .onLoop) }
            #expect(f.store.pendingAccessCount == 0, "a read refused for the loop records no access")
            let text = String(decoding: try #require(try reads.objectJSON(k)), as: UTF8.self)
            #expect(text == (try general(f, k)))
            let files = try JSONValue.parse(text)["files"]?.arrayValue ?? []
            #expect(files.compactMap { $0["path"]?.stringValue } == [path], "one entry for the file")
        }
    }

    @Test("up to the loop's edges: the loop's bytes are the pool's and the general read's, files once in path order")
    func loopAndWholeAgree() throws {
        let f = try Fixture()
        // Paths made out of order, some held through two edges: 32 files, 64 edges.
        let paths = try (0..<32).map { try f.makeFile("d/\(($0 * 37) % 32)-ü\($0 % 3).bin", size: $0) }
        let k = ref("c", "some")
        try f.store.write { try $0.put(k, value: [:]) }
        try addEdges(f, k, paths, names: 2)
        let reader = try PointReader(store: f.store)
        let expected = try general(f, k)
        let listed = try JSONValue.parse(expected)["files"]?.arrayValue?.compactMap { $0["path"]?.stringValue }
        #expect(listed == paths.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) })
        for reads in [f.store, reader] as [any PointReads] {
            for files in [FileReading.onLoop, .whole(replyLimit: .max), .whole(replyLimit: 1 << 20)] {
                let text = try #require(try reads.objectJSON(k, files: files))
                #expect(String(decoding: text, as: UTF8.self) == expected, "\(files)")
            }
        }
        // One more edge, to a file held already: refused on the loop, the same text off it.
        try addEdges(f, k, [paths[0]], names: 3)
        #expect(throws: PointReadOffLoop.self) { _ = try reader.objectJSON(k, files: .onLoop) }
        #expect(String(decoding: try #require(try reader.objectJSON(k)), as: UTF8.self) == expected)
    }

    @Test("off the loop, files that pass the reply limit are refused, and no access is recorded")
    func wholeStopsAtTheReplyLimit() throws {
        let f = try Fixture()
        let paths = try (0..<300).map { try f.makeFile("f/\($0)") }
        let k = ref("c", "wide")
        try f.store.write { try $0.put(k, value: [:]) }
        try addEdges(f, k, paths)
        let whole = try #require(try f.store.objectJSON(k))
        // A limit the whole text fits answers it; one a few files short of it is refused.
        #expect(try f.store.objectJSON(k, files: .whole(replyLimit: whole.count)) == whole)
        let error = expectCode(.replyTooLarge) {
            try f.store.objectJSON(k, touching: .yes, files: .whole(replyLimit: whole.count - 400))
        }
        #expect(error?.message.contains("control.max_reply_bytes") == true)
        #expect(f.store.pendingAccessCount == 0, "a refused read records no access")
    }
}
