// The store the query fuzzer asks: opened once per process in a temp folder, a few objects
// in it and one user index, and a short time limit so that a slow clause is cut quickly.

import AssetStore
import Foundation

/// A small store for fuzzing queries.
final class FuzzStore: Sendable {
    static let shared = FuzzStore()
    let store: Store

    private init() {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("assetfuzz-\(getpid())").path
        try? FileManager.default.removeItem(atPath: folder)
        try! FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)  // a temp folder
        var c = StoreConfiguration(roots: [folder])
        c.queryTimeLimit = 0.2
        c.indexes = [
            IndexDefinition(
                name: "media", version: "1",
                columns: [
                    IndexColumn(name: "duration", type: .real, path: JSONPath("duration")!),  // literal paths
                    IndexColumn(name: "kind", type: .text, path: JSONPath("kind")!),
                ])
        ]
        store = try! Store(path: folder + "/fuzz.sqlite", configuration: c)  // a fresh temp folder
        try! store.write { tx in  // a fresh store takes these
            for i in 0..<20 {
                try tx.put(
                    ObjectRef("m", "k\(i)"),
                    value: ["duration": .double(Double(i) / 2), "kind": i % 3 == 0 ? "a" : "b"])
            }
        }
        atexit {
            try? FileManager.default.removeItem(
                atPath: FileManager.default.temporaryDirectory.appendingPathComponent("assetfuzz-\(getpid())").path)
        }
    }
}
