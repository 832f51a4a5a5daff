// `assetbench lease-sweep --folder F [--entries E] [--files N] [--path-bytes B]`: one sweep of N
// queued files (none of them leased) while in-process leases hold E other paths of about B
// bytes each, 1,024 to a lease. Prints the sweep's wall and CPU time: every unlink asks the
// lease registry about its file inside the sweep's write transaction, so this is how long
// every client's puts wait behind leases they have nothing to do with.

import AssetStore
import Foundation
import Glibc

struct LeaseSweep {
    let folder: String
    let entries: Int
    let files: Int
    let pathBytes: Int

    init(_ f: Flags) throws {
        folder = try f.string("folder")
        entries = try f.int("entries", 65_536)
        files = try f.int("files", 1000)
        pathBytes = try f.int("path-bytes", 100)
        try check(entries >= 0 && files >= 1 && pathBytes >= 40, "--files at least 1, --path-bytes at least 40")
    }

    func run() throws {
        let root = folder + "/root"
        // The leased paths' prefix and number take about 20 bytes beside the padding.
        try check(pathBytes > root.utf8.count + 20, "--path-bytes more than --folder's length and 25")
        try FileManager.default.createDirectory(atPath: root + "/free", withIntermediateDirectories: true)
        var configuration = StoreConfiguration(roots: [root])
        configuration.unlinkDelay = 0
        let store = try Store(path: folder + "/db/assetd.sqlite", configuration: configuration)
        defer { store.close() }
        let padding = String(repeating: "p", count: pathBytes - root.utf8.count - 20)
        var i = 0
        while i < entries {
            let n = min(1024, entries - i)
            let paths = (i..<i + n).map { "\(root)/leased/\($0 / 1024)/\(padding)\($0)" }
            _ = try store.leases.acquire(objects: [], files: paths, ttl: 3600)
            i += n
        }
        var refs = [(ObjectRef, JSONValue)]()
        for i in 0..<files {
            let path = "\(root)/free/\(i).bin"
            try check(FileManager.default.createFile(atPath: path, contents: Data([1])), "created \(path)")
            refs.append((ObjectRef("bench", "k\(i)"), ["file": .string(path)]))
        }
        try store.write { tx in for (r, v) in refs { try tx.put(r, value: v) } }
        try store.write { tx in for (r, _) in refs { try tx.delete(r) } }
        let cost = ProcessCost.now()
        let start = wallClock()
        let report = try store.sweep()
        let wall = wallClock() - start
        let used = ProcessCost.now() - cost
        try check(report.unlinked.count == files, "unlinked \(report.unlinked.count) of \(files)")
        let times = String(format: "%.3f s wall, %.3f s user, %.3f s system", wall, used.user, used.system)
        print("lease-sweep: \(files) files beside \(entries) leased paths of \(pathBytes) bytes: \(times)")
    }
}
