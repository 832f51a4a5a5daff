// The eviction part of scripts/bench.sh: a trace replayed through the store's real policy
// path as a media cache would (scripts/eviction_bench.py writes the traces and runs
// libCacheSim on the same ones). Subcommands:
//   eviction --folder F --trace FILE --capacity BYTES --order lru|s3fifo|sieve
//     per request: a touch if the object is there (a hit), else a new file and a put (a
//     miss), then `Store.enforce` under `max_bytes` = capacity with low water 100%, so the
//     store and the library see the same sequence; prints the byte miss ratio.
//   eviction-cost --folder F --objects N --order ORDER
//     N objects, every third touched, a run evicting one (which places them all in the
//     order's queues), then one enforcement evicting half the bytes: prints objects evicted
//     per second of that run.

import AssetStore
import Foundation
import Glibc

/// `eviction` and `eviction-cost`.
struct EvictionBench {
    let folder: String
    let order: EvictionOrder

    init(_ f: Flags) throws {
        folder = try f.string("folder")
        guard let o = EvictionOrder(rawValue: try f.string("order")) else {
            throw BenchError("--order is lru, s3fifo or sieve")
        }
        order = o
    }

    private func open(capacity: Int64, clock: SteppedClock) throws -> Store {
        let root = folder + "/files"
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        var configuration = StoreConfiguration(roots: [root])
        configuration.durability = .normal  // miss ratios do not depend on fsync; the replay's time does
        configuration.clock = { clock.now }
        var policy = PolicyConfiguration()
        policy.maxBytes = capacity
        policy.lowWater = 1
        policy.minAge = 0
        policy.order = order
        configuration.policy = policy
        return try Store(path: folder + "/db/assetd.sqlite", configuration: configuration)
    }

    /// A sparse file of `size` bytes: its size is what the store counts.
    private func makeFile(_ path: String, size: Int64) throws {
        let fd = Glibc.open(path, O_CREAT | O_WRONLY | O_TRUNC, 0o644)
        guard fd >= 0, ftruncate(fd, off_t(size)) == 0 else { throw BenchError("cannot create \(path)") }
        close(fd)
    }

    func replay(trace: String, capacity: Int64) throws {
        let requests = try String(contentsOfFile: trace, encoding: .utf8).split(separator: "\n").map { line in
            let p = line.split(separator: " ")
            return (id: String(p[0]), size: Int64(p[1])!)
        }
        let clock = SteppedClock()
        var t = 1_000_000.0
        clock.set(t)
        let store = try open(capacity: capacity, clock: clock)
        defer { store.close() }
        var total: Int64 = 0
        var missed: Int64 = 0
        var evicted = 0
        var n = 0
        let start = monotonicNanos()
        for r in requests {
            t += 1
            clock.set(t)
            total += r.size
            let ref = ObjectRef(Bench.collection, "k" + r.id)
            do {
                try store.touch(ref)
            } catch let e as StoreError where e.code == .notFound {
                missed += r.size
                n += 1
                let path = folder + "/files/o\(r.id)-\(n)"
                try makeFile(path, size: r.size)
                try store.write { tx in try tx.put(ref, value: .object(["file": .string(path)])) }
            }
            evicted += try store.enforce().objects.count
            if n % 2000 == 0 { _ = try? store.sweep() }
        }
        let seconds = Double(monotonicNanos() - start) / 1e9
        print(
            "eviction-replay order=\(order.rawValue) requests=\(requests.count) bytes=\(total) missed=\(missed)"
                + " ratio=\(Double(missed) / Double(max(total, 1))) evicted=\(evicted) seconds=\(seconds)")
    }

    func cost(objects: Int) throws {
        let clock = SteppedClock()
        var t = 1_000_000.0
        clock.set(t)
        let size: Int64 = 4096
        let store = try open(capacity: Int64(objects) * size * 2, clock: clock)
        defer { store.close() }
        for chunk in stride(from: 0, to: objects, by: 1000) {
            try store.write { tx in
                for i in chunk..<min(chunk + 1000, objects) {
                    let path = folder + "/files/c\(i)"
                    try makeFile(path, size: size)
                    try tx.put(ObjectRef(Bench.collection, "c\(i)"), value: .object(["file": .string(path)]))
                }
            }
            t += 1
            clock.set(t)
        }
        for i in stride(from: 0, to: objects, by: 3) { try store.touch(ObjectRef(Bench.collection, "c\(i)")) }
        // One object over budget: a first run places every object in the order's queues
        // (a one-time cost for a store new to the order), so the timed run is the steady state.
        // A run places at most ten batches of objects per batch; one batch of all of them here.
        var policy = store.policy!
        let batch = policy.batch
        policy.maxBytes = Int64(objects - 1) * size
        policy.batch = objects
        store.policy = policy
        _ = try store.enforce()
        t += 1
        clock.set(t)
        policy.maxBytes = Int64(objects) * size / 2
        policy.batch = batch
        store.policy = policy
        let cpu0 = CPUSpent.own(children: false)
        let start = monotonicNanos()
        let plan = try store.enforce()
        let seconds = Double(monotonicNanos() - start) / 1e9
        // CPU time too: on a shared machine the wall time swings with other work.
        let cpu = CPUSpent.own(children: false) - cpu0
        print(
            "eviction-cost order=\(order.rawValue) objects=\(objects) evicted=\(plan.objects.count)"
                + " seconds=\(seconds) per_second=\(Double(plan.objects.count) / seconds)"
                + " cpu_seconds=\(cpu) per_cpu_second=\(Double(plan.objects.count) / cpu)")
    }
}
