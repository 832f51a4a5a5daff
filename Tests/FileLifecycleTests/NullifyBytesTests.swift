// Nullify (the field set to null, assetd(8), DATA MODEL, Edges and delete rules) removes from
// a surviving source's value the one reference whose edge went, compared as bytes: a file
// path or key canonically equal to it but spelled in other bytes names another file or
// object, and stays (else the value would drop a file the object still holds, and the next
// put of that value would release it).

import Foundation
import Testing
import AssetStore
import AssetStoreTestSupport

/// The strings of a JSON array as bytes (JSON string equality is canonical, like String's).
private func bytes(_ v: JSONValue?) -> [[UInt8]]? {
    v?.arrayValue?.map { Array(($0.stringValue ?? "").utf8) }
}

@Suite struct NullifyBytesTests {
    @Test("nullify drops the deleted file's path from an array, not a canonically equal path in other bytes")
    func filePaths() throws {
        let f = try Fixture()
        let gone = try f.makeFile(composedRing + ".bin")
        let kept = try f.makeFile(decomposedRing + ".bin")
        let album = ref("albums", "a")
        try f.store.write { tx in
            try tx.setTemplate(
                collection: "albums",
                edges: [
                    EdgeTemplate(
                        name: "cover", field: JSONPath("covers")!, to: .file,
                        rules: [.notifyIfDestinationDeleted, .deleteDestinationIfAllSourcesDeleted])
                ])
            try tx.put(album, value: ["covers": [.string(gone), .string(kept)]])
            try tx.put(ref("c", "x"), value: [:])
            try tx.addEdge(
                name: "kill", source: ref("c", "x"), destination: .file(gone), rules: .deleteDestinationIfSourceDeleted)
        }
        #expect(try f.delete(ref("c", "x")).filesQueued == [gone])
        let value = try #require(try f.store.read { try $0.get(album) }).value
        #expect(bytes(value["covers"]) == [Array(kept.utf8)], "\(value)")
        // The value as read, put back, keeps the other file.
        try f.put([(album, value)])
        _ = try f.store.sweep()
        #expect(!f.exists(gone))
        #expect(f.exists(kept))
    }

    @Test("nullify drops the deleted object's key from an array, not a canonically equal key in other bytes")
    func objectKeys() throws {
        let f = try Fixture()
        let album = ref("albums", "a")
        try f.store.write { tx in
            try tx.setTemplate(
                collection: "albums",
                edges: [
                    EdgeTemplate(
                        name: "photo", field: JSONPath("photos")!, to: .collection("photos"),
                        rules: .notifyIfDestinationDeleted)
                ])
            try tx.put(ref("photos", composedRing), value: [:])
            try tx.put(ref("photos", decomposedRing), value: [:])
            try tx.put(album, value: ["photos": [.string(composedRing), .string(decomposedRing)]])
        }
        try f.delete(ref("photos", composedRing))
        let value = try #require(try f.store.read { try $0.get(album) }).value
        #expect(bytes(value["photos"]) == [Array(decomposedRing.utf8)], "\(value)")
    }
}
