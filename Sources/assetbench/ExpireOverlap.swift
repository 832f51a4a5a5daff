// `assetbench expire-overlap --folder F [--files M] [--threads 1,2,4,16] [--rounds R]`: how
// many unlink threads beside a policy run's batches make the expiry cheapest. One store tree
// of M files as in the expire part (every tenth old); each round expires and sweeps the old
// files once per thread count, in a rotated order, then times the sweep of the same files
// alone (and deciding and deleting alone) as the baseline. Prints each expiry's end-to-end
// time over the round's sweep alone, its batches' median, and the process's CPU time.

import AssetStore
import Foundation
import Glibc
import Synchronization

struct ExpireOverlap {
    let files: Int
    let folder: String
    let threads: [Int]
    let rounds: Int

    init(_ f: Flags) throws {
        files = try f.int("files", 200_000)
        folder = try f.string("folder")
        rounds = try f.int("rounds", 2)
        let list = (try? f.string("threads")) ?? "1,2,4,16"
        let counts = list.split(separator: ",").map { Int($0) }
        threads = counts.compactMap { $0 }
        try check(
            files >= 1000 && files % FileSet.perFolder == 0 && rounds >= 1 && !threads.isEmpty
                && threads.count == counts.count && threads.allSatisfy { $0 >= 1 },
            "--files is a multiple of \(FileSet.perFolder), --rounds at least 1, --threads a list of counts")
    }

    func run() throws {
        let bench = ExpireBench(files: files, folder: folder)
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        print("expire-overlap: \(files) files, \(bench.old) old; on \(mountOptions(of: folder))")
        let set = try FileSet(root: folder + "/store-files", count: files)
        let clock = SteppedClock()
        let opened = try OpenStore(path: folder + "/db/assetd.sqlite", root: set.root, clock: clock)
        defer { opened.store.close() }
        let oldTime = wallClock() - ExpireBench.oldAge
        try bench.register(opened.store, clock, set, oldTime: oldTime, only: nil)
        for round in 0..<rounds {
            let rotated = Array(threads[(round % threads.count)...] + threads[..<(round % threads.count)])
            for t in rotated {
                opened.threadsBeside = t
                let r = try overlapped(bench, opened, clock, set, oldTime: oldTime)
                printResult("round \(round + 1) threads \(t)", r)
            }
            opened.threadsBeside = Store.sweepThreads
            let alone = try separately(bench, opened, clock, set, oldTime: oldTime)
            print(
                "round \(round + 1) alone: decide+delete \(fmt(alone.expire)) s (cpu \(fmt(alone.expireCPU)) s,"
                    + " batch median \(fmt(alone.median)) ms), sweep \(fmt(alone.sweep)) s (cpu \(fmt(alone.sweepCPU)) s)"
            )
            fflush(nil)
        }
    }

    struct Timing {
        var expire = 0.0
        var sweep = 0.0
        var expireCPU = 0.0
        var sweepCPU = 0.0
        var median = 0.0
        var beside = 0
    }

    private func printResult(_ name: String, _ r: Timing) {
        print(
            "\(name): end to end \(fmt(r.expire + r.sweep)) s = expire \(fmt(r.expire)) s (cpu \(fmt(r.expireCPU)) s,"
                + " batch median \(fmt(r.median)) ms, \(r.beside) unlinked beside) + sweep \(fmt(r.sweep)) s"
                + " (cpu \(fmt(r.sweepCPU)) s)")
        fflush(nil)
    }

    private func timedExpire(_ store: Store) throws -> (PolicyPlan, Timing) {
        sync()
        let c0 = CPUSpent.own(children: false)
        let t0 = monotonicNanos()
        let (plan, batches) = try expireTimingBatches(store)
        var t = Timing()
        t.expire = Double(monotonicNanos() - t0) / 1e9
        t.expireCPU = CPUSpent.own(children: false) - c0
        t.median = LoadResult.percentile(batches, 0.5)
        t.beside = plan.sweep?.unlinked.count ?? 0
        return (plan, t)
    }

    private func timedSweep(_ store: Store, _ t: inout Timing) throws -> Int {
        let c0 = CPUSpent.own(children: false)
        let t0 = monotonicNanos()
        let report = try store.sweep()
        t.sweep = Double(monotonicNanos() - t0) / 1e9
        t.sweepCPU = CPUSpent.own(children: false) - c0
        return report.unlinked.count
    }

    private func overlapped(
        _ bench: ExpireBench, _ opened: OpenStore, _ clock: SteppedClock, _ set: FileSet, oldTime: Double
    ) throws -> Timing {
        try opened.reopen(unlinkDelay: 0)
        var (plan, t) = try timedExpire(opened.store)
        let swept = try timedSweep(opened.store, &t)
        try check(
            plan.objects.count == bench.old && t.beside + swept == bench.old,
            "expired and unlinked \(bench.old) (\(plan.objects.count), \(t.beside + swept))")
        try putBack(bench, opened, clock, set, oldTime: oldTime)
        return t
    }

    private func separately(
        _ bench: ExpireBench, _ opened: OpenStore, _ clock: SteppedClock, _ set: FileSet, oldTime: Double
    ) throws -> Timing {
        try opened.reopen(unlinkDelay: 3600)
        var (plan, t) = try timedExpire(opened.store)
        clock.set(wallClock() + 7200)
        sync()
        let swept = try timedSweep(opened.store, &t)
        clock.set(nil)
        try check(
            plan.objects.count == bench.old && swept == bench.old,
            "expired, then swept \(bench.old) (\(plan.objects.count), \(swept))")
        try opened.reopen(unlinkDelay: 0)
        try putBack(bench, opened, clock, set, oldTime: oldTime)
        return t
    }

    /// The old files written and registered again, as before the pass.
    private func putBack(
        _ bench: ExpireBench, _ opened: OpenStore, _ clock: SteppedClock, _ set: FileSet, oldTime: Double
    ) throws {
        try bench.restore(set, only: ExpireBench.isOld)
        try bench.register(opened.store, clock, set, oldTime: oldTime, only: ExpireBench.isOld)
    }
}

/// The bench's expiry by age, with how long each batch took (ns). Progress comes after each
/// batch; the last call, after a batch that found nothing, is not one.
func expireTimingBatches(_ store: Store) throws -> (PolicyPlan, [UInt64]) {
    let laps = Mutex<(last: UInt64, deleted: Int, times: [UInt64])>((monotonicNanos(), 0, []))
    let plan = try store.expire(collection: Bench.collection, olderThan: ExpireBench.cutoff, idle: nil) { p in
        let now = monotonicNanos()
        laps.withLock {
            if p.deleted > $0.deleted { $0.times.append(now - $0.last) }
            $0.deleted = p.deleted
            $0.last = now
        }
    }
    return (plan, laps.withLock { $0.times })
}
