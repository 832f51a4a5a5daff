// Monotonic time, the result line each workload prints, and its verdict against the goal.
// Throughput ratios are engine/baseline (bigger is better); latency ratios are
// engine/baseline too, and there smaller is better.

import Foundation
import Glibc

/// Nanoseconds on CLOCK_MONOTONIC.
@inline(__always)
func monotonicNanos() -> UInt64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
}

/// Unix seconds (wall clock), for the rows' timestamps.
func wallClock() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_REALTIME, &ts)
    return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
}

/// Accumulates the time spent in the blocks it measures.
struct Stopwatch {
    /// Total nanoseconds measured so far.
    private(set) var nanos: UInt64 = 0
    /// Each measured block, in nanoseconds, in order.
    private(set) var samples: [UInt64] = []

    /// Runs `body` and adds its duration.
    @discardableResult
    mutating func measure<T>(_ body: () throws -> T) rethrows -> T {
        let start = monotonicNanos()
        let value = try body()
        let d = monotonicNanos() - start
        nanos += d
        samples.append(d)
        return value
    }

    /// Total seconds.
    var seconds: Double { Double(nanos) / 1e9 }

    /// The median sample in seconds.
    var medianSeconds: Double {
        let s = samples.sorted()
        guard !s.isEmpty else { return 0 }
        let mid = s.count / 2
        return s.count % 2 == 1 ? Double(s[mid]) / 1e9 : Double(s[mid - 1] + s[mid]) / 2e9
    }
}

/// What a workload's line reports for each side.
enum Measure {
    /// `ops` operations in `seconds`.
    case throughput(ops: Int, seconds: Double)
    /// The median latency of one run, in seconds.
    case latency(seconds: Double)

    var text: String {
        switch self {
        case .throughput(let ops, let s): return "\(Int((Double(ops) / s).rounded()))ops/s"
        case .latency(let s): return String(format: "%.3fms", s * 1000)
        }
    }
}

/// A workload's goal, as a ratio engine/baseline.
enum Goal {
    /// Throughput at least this fraction of the baseline's.
    case atLeast(Double)
    /// Latency at most this multiple of the baseline's.
    case atMost(Double)
    /// No goal; the line is for information.
    case none

    var text: String {
        switch self {
        case .atLeast(let r): return ">=" + String(format: "%.2g", r)
        case .atMost(let r): return "<=" + String(format: "%.2g", r)
        case .none: return "none"
        }
    }
}

/// One printed line: `name engine=… baseline=… ratio=… goal=… ok|MISSED`, and with rounds
/// `rounds=a/b/c`: then the ratio is their median, and engine and baseline are the totals.
struct ResultLine {
    var name: String
    var engine: Measure
    var baseline: Measure
    var goal: Goal
    /// Each round's ratio, when the workload ran in rounds.
    var rounds: [Double] = []

    var ratio: Double {
        if !rounds.isEmpty { return median(rounds) }
        switch (engine, baseline) {
        case (.throughput(let eo, let es), .throughput(let bo, let bs)):
            return (Double(eo) / es) / (Double(bo) / bs)
        case (.latency(let e), .latency(let b)):
            return e / b
        default:
            preconditionFailure("a line compares like with like")
        }
    }

    var verdict: String {
        switch goal {
        case .atLeast(let r): return ratio >= r ? "ok" : "MISSED"
        case .atMost(let r): return ratio <= r ? "ok" : "MISSED"
        case .none: return "info"
        }
    }

    var text: String {
        let padded = name.padding(toLength: max(name.count, 15), withPad: " ", startingAt: 0)
        return "\(padded) engine=\(engine.text) baseline=\(baseline.text) ratio=\(String(format: "%.2f", ratio))"
            + " goal=\(goal.text) \(verdict)"
            + (rounds.isEmpty
                ? "" : " rounds=" + rounds.map { String(format: "%.2f", $0) }.joined(separator: "/") + " (median)")
    }
}

/// Writes a line to standard error (progress and failures; results go to standard output).
func printError(_ s: String) {
    FileHandle.standardError.write(Data((s + "\n").utf8))
}
