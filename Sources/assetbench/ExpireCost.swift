// `assetbench expire-cost --folder F [--objects M] [--rounds R] [--batch B,…] [--puts yes]`: deciding and deleting
// expired objects alone, for a profiler (perf, callgrind) to look at without the part's file
// trees: M objects (every tenth old) hold a file each, sized as the part's but sparse (so that
// removing them costs no discards), and `Store.expire` runs with an hour's
// `unlink_delay`, so nothing is unlinked. Each round puts the old objects back first. Prints
// the time per expired object. `--batch`: the policy batch, a list taken in turn by the rounds (an A/B on one store); `--puts yes`: a thread puts one
// object per durable commit throughout each round, and its put latencies are printed (the
// writer is shared, so a batch holds those puts back).

import AssetStore
import Foundation
import Glibc
import Synchronization

struct ExpireCost {
    let folder: String
    let objects: Int
    let rounds: Int
    let batches: [Int]
    let puts: Bool

    init(_ f: Flags) throws {
        folder = try f.string("folder")
        objects = try f.int("objects", 200_000)
        rounds = try f.int("rounds", 1)
        batches = try ((try? f.string("batch")) ?? "\(PolicyConfiguration().batch)").split(separator: ",").map {
            guard let b = Int($0), b >= 1 else { throw BenchError("--batch is a list of whole numbers from 1") }
            return b
        }
        puts = (try? f.string("puts")) == "yes"
        try check(objects >= 10 && rounds >= 1 && !batches.isEmpty, "--objects is at least 10 and --rounds at least 1")
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
        // Every object's file exists with the part's sizes (the size indexes then hold what the
        // part's do), sparse: no data blocks, so nothing needs discards.
        for i in 0..<objects {
            if i % 1000 == 0 {
                try FileManager.default.createDirectory(
                    atPath: path(i, folderOnly: true), withIntermediateDirectories: true)
            }
            let fd = open(path(i), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
            try check(fd >= 0 && ftruncate(fd, off_t(FileSet.size(i))) == 0, "created \(path(i))")
            close(fd)
        }
        let old = wallClock() - ExpireBench.oldAge
        try put(store, clock, oldTime: old, onlyOld: false)
        for round in 0..<rounds {
            if round > 0 { try put(store, clock, oldTime: old, onlyOld: true) }
            let batch = batches[round % batches.count]
            store.policy?.batch = batch
            let putter = puts ? ConcurrentPuts.start(store, round: round) : nil
            let before = ProcessCost.now()
            let t0 = monotonicNanos()
            let plan = try store.expire(collection: Bench.collection, olderThan: ExpireBench.cutoff, idle: nil)
            let seconds = Double(monotonicNanos() - t0) / 1e9
            let cost = ProcessCost.now() - before
            if let putter { print("expire-cost: round \(round + 1): " + putter.stop()) }
            let n = plan.objects.count
            try check(n == (objects + 9) / 10, "expired \((objects + 9) / 10) objects (\(n))")
            print(
                "expire-cost: round \(round + 1), batch \(batch): \(n) of \(objects) objects in \(fmt(seconds)) s ="
                    + " \(String(format: "%.1f", seconds / Double(n) * 1e6)) us per object, \(plan.commits.count) commits;"
                    + " \(cost.text(per: n)); after: \(Footprint.Memory(pid: getpid()).text)"
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

/// The process's CPU time and I/O (/proc/self/io) at one moment, to tell where a round's
/// wall time went: user or system CPU, bytes written (WAL frames, checkpoints) and read.
struct ProcessCost {
    var user = 0.0
    var system = 0.0
    var io = [String: Double]()

    static func now() -> ProcessCost {
        var ru = rusage()
        getrusage(RUSAGE_SELF.rawValue, &ru)
        var c = ProcessCost()
        c.user = Double(ru.ru_utime.tv_sec) + Double(ru.ru_utime.tv_usec) / 1e6
        c.system = Double(ru.ru_stime.tv_sec) + Double(ru.ru_stime.tv_usec) / 1e6
        let text = (try? String(contentsOfFile: "/proc/self/io", encoding: .utf8)) ?? ""
        for line in text.split(separator: "\n") {
            let f = line.split(separator: ":")
            if f.count == 2, let v = Double(f[1].trimmingCharacters(in: .whitespaces)) { c.io[String(f[0])] = v }
        }
        return c
    }

    static func - (a: ProcessCost, b: ProcessCost) -> ProcessCost {
        var c = ProcessCost(user: a.user - b.user, system: a.system - b.system)
        for (k, v) in a.io { c.io[k] = v - (b.io[k] ?? 0) }
        return c
    }

    /// CPU per object, and I/O per object: bytes written (`wchar`) and read (`rchar`), calls.
    func text(per n: Int) -> String {
        let d = Double(max(1, n))
        func us(_ x: Double) -> String { String(format: "%.1f", x / d * 1e6) }
        func per(_ k: String) -> String { String(format: "%.1f", (io[k] ?? 0) / d) }
        return "cpu user \(us(user)) us, sys \(us(system)) us per object; per object: write \(per("wchar")) B"
            + " in \(per("syscw")) calls, read \(per("rchar")) B in \(per("syscr")) calls"
    }
}

/// One thread putting one object per durable commit until stopped, timing each put.
private final class ConcurrentPuts: @unchecked Sendable {
    private let stopping = Atomic<Bool>(false)
    private let done = DispatchSemaphore(value: 0)
    private var latencies = [UInt64]()
    private var failure: String?

    static func start(_ store: Store, round: Int) -> ConcurrentPuts {
        let p = ConcurrentPuts()
        Thread {
            var i = 0
            while !p.stopping.load(ordering: .relaxed) {
                let t0 = monotonicNanos()
                do {
                    try store.write { tx in
                        try tx.put(ObjectRef("puts", "r\(round)-\(i)"), value: .object(["n": .int(Int64(i))]))
                    }
                } catch {
                    p.failure = "\(error)"
                    break
                }
                p.latencies.append(monotonicNanos() - t0)
                i += 1
            }
            p.done.signal()
        }.start()
        return p
    }

    /// Stops the thread; its puts' count and latencies.
    func stop() -> String {
        stopping.store(true, ordering: .relaxed)
        done.wait()
        if let failure { return "concurrent puts failed: \(failure)" }
        func ms(_ p: Double) -> String { fmt(LoadResult.percentile(latencies, p)) }
        return "\(latencies.count) concurrent durable puts: p50 \(ms(0.5)) ms, p99 \(ms(0.99)) ms, max \(ms(1)) ms"
    }
}
