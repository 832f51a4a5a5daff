// The workloads of scripts/bench.sh (part store) that have a SQLite C baseline, engine and baseline
// side by side in one process on the same data shape. Batched work alternates engine and baseline
// batch by batch (and which goes first), so drift on a shared machine hits both alike. Each
// workload checks that both sides did the whole work before its line is printed.

import Foundation
import Glibc
import GRDBSQLite

/// One benchmark run at a given N.
final class Bench {
    static let collection = "assets"
    /// Objects per write transaction, on both sides.
    static let batch = 1000
    /// "owner0" … "owner99"; object i belongs to owner i % 100.
    static let owners = (0..<100).map { "owner\($0)" }
    /// Timed runs of the top-100 query, and of the aggregate.
    static let queryRuns = 200
    static let aggregateRuns = 30

    let n: Int
    let scratch: Scratch
    /// Object keys, "k00000000" …, in put order.
    let keys: [String]

    init(n: Int, scratch: Scratch) {
        self.n = n
        self.scratch = scratch
        keys = (0..<n).map { "k" + pad($0, 8) }
    }

    func run() throws {
        let start = monotonicNanos()
        defer { print("total \(Int((Double(monotonicNanos() - start) / 1e9).rounded()))s") }
        printHeader()
        try withSides { engine, baseline, engineFiles, baselineFiles in
            emit(try put(engine, baseline, engineFiles, baselineFiles))
            // Without the counting allocator the store refuses its query connections, which
            // gets use too (PlainAllocator.swift): only the puts are measured.
            guard assetbenchPlainAllocator() == 0 else { return }
            emit(try get(engine, baseline))
            emit(try get(engine, baseline, inRead: true))
            emit(try top100(engine, baseline))
            emit(try sumByOwner(engine, baseline))
            emit(try delete(engine, baseline))
            emit(try sharedFileDelete())
            emit(try sweep(engine, engineFiles, baselineFiles))
        }
    }

    /// Runs `body` on an empty engine and baseline, each with its N files, and removes them after.
    func withSides(_ body: (EngineSide, BaselineStore, FileSet, FileSet) throws -> Void) throws {
        let engineDir = try scratch.folder("engine")
        let baselineDir = try scratch.folder("baseline")
        progress("creating \(n) files for each side")
        let engineFiles = try FileSet(root: engineDir + "/files", count: n)
        let baselineFiles = try FileSet(root: baselineDir + "/files", count: n)
        sync()  // both sides start with their files written back, not being written back
        let engine = try EngineSide(database: engineDir + "/db/assetd.sqlite", root: engineFiles.root)
        let baseline = BaselineStore(
            path: try scratch.folder("baseline/db") + "/baseline.sqlite",
            schema: BaselineStore.schema(copiedFrom: engine.store.path))
        try body(engine, baseline, engineFiles, baselineFiles)
        engine.close()
        scratch.remove(engineDir)
        scratch.remove(baselineDir)
    }

    // MARK: workloads

    /// (1) N objects, each holding its own file, 1,000 per write transaction.
    func put(_ engine: EngineSide, _ baseline: BaselineStore, _ ef: FileSet, _ bf: FileSet) throws -> ResultLine {
        progress("put")
        let (e, b) = try alternatingBatches(
            count: n,
            engine: { try engine.put($0, keys: keys, owners: Bench.owners) { ef.paths[$0] } },
            baseline: { try baseline.put($0, keys: keys, owners: Bench.owners, root: bf.root) { bf.paths[$0] } })
        try check(try engine.objectCount() == n, "engine holds \(n) objects")
        try check(baseline.count("object") == n, "baseline holds \(n) objects")
        return ResultLine(
            name: "put", engine: .throughput(ops: n, seconds: e.seconds),
            baseline: .throughput(ops: n, seconds: b.seconds), goal: .atLeast(1.0))
    }

    /// (2) Point gets of every object, in a shuffled order, each on its own snapshot:
    /// `Store.get`, or (`inRead`, for information) `Store.read` around `ReadTransaction.get`.
    func get(_ engine: EngineSide, _ baseline: BaselineStore, inRead: Bool = false) throws -> ResultLine {
        progress(inRead ? "get-in-read" : "get")
        var rng = SplitMix64(seed: 42)
        var order = Array(0..<n)
        order.shuffle(using: &rng)
        let get = inRead ? engine.getInRead : engine.get
        let (e, b) = try alternatingBatches(
            count: n,
            engine: { r in
                for i in order[r] { try check(try get(keys[i]) == 1, "engine gets \(keys[i]) with its file") }
            },
            baseline: { r in
                for i in order[r] { try check(baseline.get(keys[i])?.files.count == 1, "baseline gets \(keys[i])") }
            })
        return ResultLine(
            name: inRead ? "get-in-read" : "get", engine: .throughput(ops: n, seconds: e.seconds),
            baseline: .throughput(ops: n, seconds: b.seconds), goal: inRead ? .none : .atLeast(0.5))
    }

    /// (3) The 100 largest objects of one owner, for owner after owner.
    func top100(_ engine: EngineSide, _ baseline: BaselineStore) throws -> ResultLine {
        progress("top100")
        let owners = Bench.owners.count
        // Owner k holds the objects i with i % 100 == k.
        func expected(_ k: Int) -> Int { min(100, n / owners + (k < n % owners ? 1 : 0)) }
        let (e, b) = try alternatingRuns(
            count: Bench.queryRuns, warmUp: 5,
            engine: { i in
                let k = (i * 37) % owners
                try check(
                    try engine.top100(owner: Bench.owners[k]).count == expected(k), "engine finds \(expected(k)) rows")
            },
            baseline: { i in
                let k = (i * 37) % owners
                try check(
                    baseline.top100(owner: Bench.owners[k]).count == expected(k), "baseline finds \(expected(k)) rows")
            })
        return ResultLine(
            name: "top100-by-size", engine: .latency(seconds: e.medianSeconds),
            baseline: .latency(seconds: b.medianSeconds), goal: .atMost(1.2))
    }

    /// (4) SUM(size) GROUP BY owner over the whole index.
    func sumByOwner(_ engine: EngineSide, _ baseline: BaselineStore) throws -> ResultLine {
        progress("sum-by-owner")
        let total = (0..<n).reduce(Int64(0)) { $0 + Int64(FileSet.size($1)) }
        let (e, b) = try alternatingRuns(
            count: Bench.aggregateRuns, warmUp: 3,
            engine: { _ in
                let r = try engine.sumByOwner()
                try check(r.groups == Bench.owners.count && r.total == total, "engine sums \(total) bytes")
            },
            baseline: { _ in
                let rows = baseline.sumByOwner()
                try check(
                    rows.count == Bench.owners.count && rows.reduce(0) { $0 + $1.1 } == total,
                    "baseline sums \(total) bytes")
            })
        return ResultLine(
            name: "sum-by-owner", engine: .latency(seconds: e.medianSeconds),
            baseline: .latency(seconds: b.medianSeconds), goal: .atMost(1.5))
    }

    /// (5) Deletes every object, each unlink of its file queued, 1,000 per transaction.
    func delete(_ engine: EngineSide, _ baseline: BaselineStore) throws -> ResultLine {
        progress("delete")
        var engineQueued = 0
        var baselineQueued = 0
        // Batch j runs at the engine's time sweepTime(j), so the sweep can take it alone.
        let (e, b) = try alternatingBatches(
            count: n,
            engine: { r in engineQueued += try engine.at(sweepTime(r)) { try engine.delete(r, keys: keys) } },
            baseline: { baselineQueued += try baseline.delete($0, keys: keys) })
        try check(
            engineQueued == n && (try engine.objectCount()) == 0, "engine deleted \(n) objects, queued \(n) files")
        try check(
            baselineQueued == n && baseline.count("object") == 0 && baseline.count("unlink_queue") == n,
            "baseline deleted \(n) objects, queued \(n) files")
        return ResultLine(
            name: "delete", engine: .throughput(ops: n, seconds: e.seconds),
            baseline: .throughput(ops: n, seconds: b.seconds), goal: .atLeast(1.0))
    }

    /// (6) N objects sharing N/10 files (object i holds file i % (N/10), so a file's holders
    /// span the whole run); deletes them all, 1,000 per transaction, reference counting
    /// deciding when a file is queued. Fresh store and database, set up untimed.
    func sharedFileDelete() throws -> ResultLine {
        let fileCount = n / 10
        let engineDir = try scratch.folder("engine-shared")
        let baselineDir = try scratch.folder("baseline-shared")
        defer {
            scratch.remove(engineDir)
            scratch.remove(baselineDir)
        }
        progress("shared-file delete: setting up \(n) objects over \(fileCount) files per side")
        let ef = try FileSet(root: engineDir + "/files", count: fileCount)
        let bf = try FileSet(root: baselineDir + "/files", count: fileCount)
        sync()
        let engine = try EngineSide(database: engineDir + "/db/assetd.sqlite", root: ef.root)
        defer { engine.close() }
        let baseline = BaselineStore(
            path: try scratch.folder("baseline-shared/db") + "/baseline.sqlite",
            schema: BaselineStore.schema(copiedFrom: engine.store.path))
        _ = try alternatingBatches(
            count: n,
            engine: { try engine.put($0, keys: keys, owners: Bench.owners) { ef.paths[$0 % fileCount] } },
            baseline: {
                try baseline.put($0, keys: keys, owners: Bench.owners, root: bf.root) { bf.paths[$0 % fileCount] }
            })
        try check(
            baseline.count("file") == fileCount && baseline.count("edge") == n, "baseline shares \(fileCount) files")

        progress("shared-file delete")
        var engineQueued = 0
        var baselineQueued = 0
        let (e, b) = try alternatingBatches(
            count: n,
            engine: { engineQueued += try engine.delete($0, keys: keys) },
            baseline: { baselineQueued += try baseline.delete($0, keys: keys) })
        try check(engineQueued == fileCount, "engine queued \(fileCount) files, not \(engineQueued)")
        try check(baselineQueued == fileCount, "baseline queued \(fileCount) files, not \(baselineQueued)")
        return ResultLine(
            name: "delete-shared", engine: .throughput(ops: n, seconds: e.seconds),
            baseline: .throughput(ops: n, seconds: b.seconds), goal: .atLeast(1.0))
    }

    /// (7) The engine sweeps the N unlinks its delete queued; the baseline unlinks the same
    /// number of its own files (made at the same time, same layout) in a tight loop. Both
    /// start from written-back files (sync) and go 1,000 files at a time, alternating: the
    /// engine's sweep at the time its batch was deleted takes that batch's files only.
    func sweep(_ engine: EngineSide, _ ef: FileSet, _ bf: FileSet) throws -> ResultLine {
        progress("sweep")
        sync()
        var unlinked = 0
        var removed = 0
        let (e, b) = try alternatingBatches(
            count: n,
            engine: { r in unlinked += try engine.at(sweepTime(r)) { try engine.sweep() } },
            baseline: { r in removed += UnlinkLoop.run(bf, r) })
        try check(unlinked == n && ef.existing() == 0, "engine swept \(n) files, not \(unlinked)")
        try check(removed == n && bf.existing() == 0, "the loop unlinked \(n) files, not \(removed)")
        return ResultLine(
            name: "sweep", engine: .throughput(ops: n, seconds: e.seconds),
            baseline: .throughput(ops: n, seconds: b.seconds), goal: .atLeast(0.8))
    }

    /// The engine's clock for deleting, and then sweeping, the batch `r`.
    private let sweepStart = Date().timeIntervalSince1970
    func sweepTime(_ r: Range<Int>) -> Double { sweepStart + Double(r.lowerBound / Bench.batch) }

    // MARK: drivers

    /// Runs `0..<count` in batches, engine and baseline alternately, alternating which goes first.
    func alternatingBatches(
        count: Int, engine: (Range<Int>) throws -> Void, baseline: (Range<Int>) throws -> Void
    ) throws -> (engine: Stopwatch, baseline: Stopwatch) {
        let batches = stride(from: 0, to: count, by: Bench.batch).lazy.map { $0..<min($0 + Bench.batch, count) }
        return try alternating(batches, engine: engine, baseline: baseline)
    }

    /// `warmUp` untimed runs of each, then `count` timed runs, alternating as above.
    func alternatingRuns(
        count: Int, warmUp: Int, engine: (Int) throws -> Void, baseline: (Int) throws -> Void
    ) throws -> (engine: Stopwatch, baseline: Stopwatch) {
        for i in 0..<warmUp {
            try engine(i)
            try baseline(i)
        }
        return try alternating(0..<count, engine: engine, baseline: baseline)
    }

    /// Times engine and baseline on each step, alternating which goes first (the engine on
    /// the first step).
    private func alternating<Step>(
        _ steps: some Sequence<Step>, engine: (Step) throws -> Void, baseline: (Step) throws -> Void
    ) throws -> (engine: Stopwatch, baseline: Stopwatch) {
        var e = Stopwatch()
        var b = Stopwatch()
        for (j, step) in steps.enumerated() {
            if j % 2 == 0 {
                try e.measure { try engine(step) }
                try b.measure { try baseline(step) }
            } else {
                try b.measure { try baseline(step) }
                try e.measure { try engine(step) }
            }
        }
        return (e, b)
    }

    // MARK: output

    func printHeader() {
        var u = utsname()
        uname(&u)
        let kernel = withUnsafeBytes(of: &u.release) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        let cpu =
            (try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8))?
            .split(separator: "\n").first { $0.hasPrefix("model name") }?
            .split(separator: ":", maxSplits: 1).last?.trimmingCharacters(in: .whitespaces) ?? "unknown CPU"
        print(
            "assetbench N=\(n) nproc=\(ProcessInfo.processInfo.activeProcessorCount) cpu=\"\(cpu)\" linux=\(kernel)"
                + " sqlite=\(String(cString: sqlite3_libversion()))")
        print(
            "engine: StoreConfiguration defaults (durability full); baseline: SQLite C API, WAL, synchronous=FULL, mmap 1 GiB;"
                + " \(Bench.batch) objects per write transaction on both sides")
        print(
            "both sides identify each file they put the same way: found with openat2 (O_PATH) beneath the root (no"
                + " symlink, no mount crossed), statx, reopened through /proc/self/fd for FS_IOC_GETVERSION; the registry"
                + " keeps birth, generation and ctime; a new path's queued unlink is cancelled, and its file listed as"
                + " shared when another row names its inode")
        print(
            "ratio = engine/baseline; throughput goals are minimums; latency = median of \(Bench.queryRuns) (top100)"
                + " and \(Bench.aggregateRuns) (sum) runs, goals are maximums; sweep = store.sweep() per \(Bench.batch) queued"
                + " vs an unlinkat loop; get-in-read (Store.read around the get) has no goal (info)")
        fflush(nil)
    }

    func emit(_ line: ResultLine) {
        print(line.text)
        fflush(nil)
    }

    func progress(_ s: String) { printError("[assetbench] " + s) }
}

/// A small seeded generator, so both sides (and every run) get the same order.
struct SplitMix64: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
