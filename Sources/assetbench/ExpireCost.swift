// `assetbench expire-cost --folder F [--objects M] [--rounds R]`: deciding and deleting
// expired objects alone, for a profiler (perf, callgrind) to look at without the part's file
// trees: M objects (every tenth old) hold a file each; only the old ones' files exist (empty,
// so that removing them costs no discards), and `Store.expire` runs with an hour's
// `unlink_delay`, so nothing is unlinked. Each round puts the old objects back first. Prints
// the time per expired object.

import AssetStore
import Foundation

struct ExpireCost {
    let folder: String
    let objects: Int
    let rounds: Int

    init(_ f: Flags) throws {
        folder = try f.string("folder")
        objects = try f.int("objects", 200_000)
        rounds = try f.int("rounds", 1)
        try check(objects >= 10 && rounds >= 1, "--objects is at least 10 and --rounds at least 1")
    }

    func run() throws {
        let root = folder + "/root"
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        let clock = SteppedClock()
        var configuration = StoreConfiguration(roots: [root])
        configuration.clock = { clock.now }
        configuration.unlinkDelay = 3600
        var policy = PolicyConfiguration()
        policy.minAge = 0
        configuration.policy = policy
        let store = try Store(path: folder + "/db/assetd.sqlite", configuration: configuration)
        defer { store.close() }
        for i in stride(from: 0, to: objects, by: 10) {
            if i % 1000 == 0 {
                try FileManager.default.createDirectory(
                    atPath: path(i, folderOnly: true), withIntermediateDirectories: true)
            }
            try check(FileManager.default.createFile(atPath: path(i), contents: nil), "created \(path(i))")
        }
        let old = wallClock() - ExpireBench.oldAge
        try put(store, clock, oldTime: old, onlyOld: false)
        for round in 0..<rounds {
            if round > 0 { try put(store, clock, oldTime: old, onlyOld: true) }
            let t0 = monotonicNanos()
            let plan = try store.expire(collection: Bench.collection, olderThan: ExpireBench.cutoff, idle: nil)
            let seconds = Double(monotonicNanos() - t0) / 1e9
            let n = plan.objects.count
            try check(n == (objects + 9) / 10, "expired \((objects + 9) / 10) objects (\(n))")
            print(
                "expire-cost: round \(round + 1): \(n) of \(objects) objects in \(fmt(seconds)) s ="
                    + " \(String(format: "%.1f", seconds / Double(n) * 1e6)) us per object, \(plan.commits.count) commits"
            )
        }
    }

    private func path(_ i: Int, folderOnly: Bool = false) -> String {
        let d = folder + "/root/d" + pad(i / 1000, 4)
        return folderOnly ? d : d + "/f" + pad(i, 8)
    }

    /// Objects `assets/k…`, one file each; every tenth created at `oldTime`.
    private func put(_ store: Store, _ clock: SteppedClock, oldTime: Double, onlyOld: Bool) throws {
        for start in stride(from: 0, to: objects, by: 1000) {
            for wantOld in [true, false] where wantOld || !onlyOld {
                let ids = (start..<min(objects, start + 1000)).filter { ($0 % 10 == 0) == wantOld }
                clock.set(wantOld ? oldTime : nil)
                defer { clock.set(nil) }
                try store.write { tx in
                    for i in ids {
                        let value: JSONValue = .object([
                            "file": .string(path(i)),
                            "owner": .string(Bench.owners[i % 100]),
                        ])
                        try tx.put(ObjectRef(Bench.collection, "k" + pad(i, 8)), value: value)
                    }
                }
            }
        }
    }
}
