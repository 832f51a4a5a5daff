// `assetbench top100 --n N [--runs R] [--side both|engine|baseline]`: the store part's top-100
// workload alone, on N objects put as that part puts them. Both sides: its result line, R times
// (default 3). One side: R queries of that side alone and nothing else timed, for a profiler
// (callgrind, perf stat) to compare with a run of --runs 0.

import Glibc

extension Bench {
    static func top100Only(_ flags: Flags) throws {
        let n = try flags.int("n", 50_000)
        let side = (try? flags.string("side")) ?? "both"
        guard ["both", "engine", "baseline"].contains(side) else {
            throw BenchError("--side is both, engine or baseline")
        }
        let runs = try flags.int("runs", side == "both" ? 3 : 10_000)
        let scratch = Scratch(parent: nil)
        defer { scratch.removeAll() }
        let bench = Bench(n: n, scratch: scratch)
        if side == "both" { bench.printHeader() }
        try bench.withSides { engine, baseline, engineFiles, baselineFiles in
            let put = try bench.put(engine, baseline, engineFiles, baselineFiles)
            if side == "both" { bench.emit(put) }
            for i in 0..<runs {
                let owner = Bench.owners[(i * 37) % Bench.owners.count]
                switch side {
                case "engine": _ = try engine.top100(owner: owner)
                case "baseline": _ = baseline.top100(owner: owner)
                default: bench.emit(try bench.top100(engine, baseline))
                }
            }
        }
    }
}
