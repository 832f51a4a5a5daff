// `assetbench access-flush --folder F [--objects M] [--touches K] [--rounds R] [--order O]
// [--rate T]`: the access flush alone, for a profiler (callgrind with
// `--toggle-collect='*flushAccesses*'`) to look at: M objects as `populate` makes them, then
// per round K touches of objects drawn at random (a fixed sequence) and one
// `Store.flushAccesses`, timed. `--order none` runs without a policy (the socket bench's
// daemon), lru, s3fifo or sieve with one that never runs. The touches are T a second of a
// clock of their own: their times spread as in the socket bench, however slow the profiler.

import AssetStore
import Foundation
import Synchronization

struct AccessFlushCost {
    let folder: String
    let objects: Int
    let touches: Int
    let rounds: Int
    let order: EvictionOrder?
    let rate: Double

    init(_ f: Flags) throws {
        folder = try f.string("folder")
        objects = try f.int("objects", 50_000)
        touches = try f.int("touches", 50_000)
        rounds = try f.int("rounds", 3)
        let name = (try? f.string("order")) ?? "s3fifo"
        if name == "none" {
            order = nil
        } else {
            guard let o = EvictionOrder(rawValue: name) else {
                throw BenchError("--order is none, lru, s3fifo or sieve")
            }
            order = o
        }
        rate = try f.double("rate", 85_000)
        try check(objects >= 1 && touches >= 1 && rounds >= 1, "--objects, --touches and --rounds are at least 1")
        try check(rate > 0 && rate.isFinite, "--rate is a number of touches a second above 0")
    }

    func run() throws {
        let root = folder + "/files"
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        var configuration = StoreConfiguration(roots: [root])
        let clock = Mutex(Date().timeIntervalSince1970)
        configuration.clock = { clock.withLock { $0 } }
        if let order {
            var policy = PolicyConfiguration()
            policy.order = order
            configuration.policy = policy
        }
        let store = try Store(path: folder + "/db/assetd.sqlite", configuration: configuration)
        defer { store.close() }
        for first in stride(from: 0, to: objects, by: 10_000) {
            try store.write { tx in
                for i in first..<min(first + 10_000, objects) {
                    try tx.put(
                        ObjectRef(SocketCommands.collection, SocketCommands.key(i)), value: SocketCommands.value(i))
                }
            }
        }
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        for round in 0..<rounds {
            for _ in 0..<touches {
                state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
                let i = Int((state >> 33) % UInt64(objects))
                clock.withLock { $0 += 1 / rate }
                try store.touch(ObjectRef(SocketCommands.collection, SocketCommands.key(i)))
            }
            let pending = store.pendingAccessCount
            let t0 = monotonicNanos()
            try store.flushAccesses()
            let seconds = Double(monotonicNanos() - t0) / 1e9
            print(
                "access-flush: round \(round + 1): \(pending) objects (\(touches) touches) in \(fmt(seconds)) s ="
                    + " \(String(format: "%.2f", seconds / Double(pending) * 1e6)) us per object"
            )
        }
    }
}
