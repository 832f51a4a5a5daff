// `assetbench put-ceiling DB ROOT COUNT BATCH`: the socket put workload's objects put straight
// through Store.write, BATCH per commit on one thread, no socket, once with durability full
// (each write waits for its fdatasync, which the daemon overlaps with the next commit) and
// once with normal (no sync: the most one writer commits). Information for reading the
// socket-put figure: how much of a put is the engine's, how much the daemon's pipeline.

import AssetStore
import Foundation

extension SocketCommands {
    static func putCeiling(_ args: [String]) throws {
        guard args.count == 4, let count = Int(args[2]), let batch = Int(args[3]), count > 0, batch > 0 else {
            throw BenchError("usage: assetbench put-ceiling DB ROOT COUNT BATCH")
        }
        var rates = [String]()
        for (round, durability) in [StoreConfiguration.Durability.full, .normal].enumerated() {
            var c = StoreConfiguration(roots: [args[1]])
            c.durability = durability
            let store = try Store(path: args[0], configuration: c)
            defer { store.close() }
            let start = monotonicNanos()
            for first in stride(from: 0, to: count, by: batch) {
                try store.write { tx in
                    for i in first..<min(first + batch, count) {
                        let n = round * count + i
                        try tx.put(ObjectRef(collection, "c" + pad(n, 8)), value: value(n))
                    }
                }
            }
            let seconds = Double(monotonicNanos() - start) / 1e9
            rates.append(
                "durability \(durability.rawValue) \(Int(Double(count) / seconds))/s"
                    + " (\(String(format: "%.1f", seconds * 1e6 / Double(count))) us per put)")
        }
        print(
            "  socket-put-engine (info): \(count) puts of the same objects, \(batch) per commit, through Store.write on one"
                + " thread without the socket: " + rates.joined(separator: "; "))
    }
}
