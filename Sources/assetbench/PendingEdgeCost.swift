// `assetbench pending-edges --folder F [--edges N]`: one transaction of N `edge.add` whose
// source does not exist yet (each edge waits as pending), then the N sources put and the
// commit, which resolves them; timed in CPU seconds, for a profiler (callgrind with
// `--toggle-collect='*addEdge*'`) too. A transact of many such edges was quadratic in them.

import AssetStore
import Foundation

struct PendingEdgeCost {
    let folder: String
    let edges: Int

    init(_ f: Flags) throws {
        folder = try f.string("folder")
        edges = try f.int("edges", 20_000)
        try check(edges >= 1, "--edges is at least 1")
    }

    func run() throws {
        let root = folder + "/files"
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        let store = try Store(path: folder + "/db/assetd.sqlite", configuration: StoreConfiguration(roots: [root]))
        defer { store.close() }
        try store.write { tx in try tx.put(ObjectRef("dst", "d"), value: .object([:])) }
        let before = ProcessCost.now()
        try store.write { tx in
            for i in 0..<edges {
                try tx.addEdge(
                    name: "e", source: ObjectRef("src", "s\(i)"), destination: .object(ObjectRef("dst", "d")),
                    rules: [])
            }
            let added = ProcessCost.now() - before
            print("pending-edges: \(edges) edge.add in \(fmt(added.user + added.system)) s CPU")
            for i in 0..<edges { try tx.put(ObjectRef("src", "s\(i)"), value: .object([:])) }
        }
        let all = ProcessCost.now() - before
        print("pending-edges: with the puts and the commit \(fmt(all.user + all.system)) s CPU")
    }
}
