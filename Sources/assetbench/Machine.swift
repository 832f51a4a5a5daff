// What the benchmarks learn about the machine around them: CPU time of the processes under
// test and of everything else, the file system a folder is on (fsync costs nothing on
// tmpfs), and the output of the tools they run. Read from /proc and getrusage(2) around the
// timed blocks, never inside them.

import Foundation
import Glibc

/// CPU seconds (user + system) spent by a server process and by its client, summed over
/// measured blocks. The client is this process, or its waited-for children.
struct CPUSpent {
    var server = 0.0
    var client = 0.0
    /// Busy CPU seconds of the whole machine, and wall seconds, over the same blocks.
    var machine = 0.0
    var wall = 0.0

    /// Cores' worth of CPU that went to other processes (other work on a shared machine).
    var others: Double { max(0, (machine - server - client) / wall) }

    mutating func measure<T>(server pid: Int32, clientIsChild: Bool = false, _ body: () throws -> T) rethrows -> T {
        let s0 = CPUSpent.process(pid)
        let c0 = CPUSpent.own(children: clientIsChild)
        let m0 = CPUSpent.machineBusy()
        let w0 = monotonicNanos()
        let value = try body()
        server += CPUSpent.process(pid) - s0
        client += CPUSpent.own(children: clientIsChild) - c0
        machine += CPUSpent.machineBusy() - m0
        wall += Double(monotonicNanos() - w0) / 1e9
        return value
    }

    /// Busy seconds of all CPUs (the `cpu` line of /proc/stat, less idle and iowait).
    static func machineBusy() -> Double {
        guard let s = try? String(contentsOfFile: "/proc/stat", encoding: .utf8),
            let line = s.split(separator: "\n").first, line.hasPrefix("cpu ")
        else { return .nan }
        let f = line.split(separator: " ").dropFirst().compactMap { Double($0) }
        guard f.count >= 5 else { return .nan }
        return (f.prefix(8).reduce(0, +) - f[3] - f[4]) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    /// The threads of `pid` (0 if unknown).
    static func threads(_ pid: Int32) -> Int {
        guard pid > 0 else { return 0 }
        return (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task").count) ?? 0
    }

    /// All threads of `pid`, from /proc (clock ticks); NaN if unknown.
    static func process(_ pid: Int32) -> Double {
        guard pid > 0, let s = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = s.lastIndex(of: ")")
        else { return .nan }
        let f = s[s.index(after: close)...].split(separator: " ")
        // f[0] is field 3 (state); utime and stime are fields 14 and 15.
        guard f.count > 12, let u = Double(f[11]), let st = Double(f[12]) else { return .nan }
        return (u + st) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    static func own(children: Bool) -> Double {
        var ru = rusage()
        getrusage(children ? RUSAGE_CHILDREN.rawValue : RUSAGE_SELF.rawValue, &ru)
        return Double(ru.ru_utime.tv_sec) + Double(ru.ru_utime.tv_usec) / 1e6 + Double(ru.ru_stime.tv_sec)
            + Double(ru.ru_stime.tv_usec) / 1e6
    }
}

/// Runs a program found on PATH and returns its standard output (standard error passes through).
func runTool(_ argv: [String]) throws -> String {
    let p = Process()
    p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    p.arguments = argv
    let pipe = Pipe()
    p.standardOutput = pipe
    try p.run()
    let data = pipe.fileHandleForReading.readDataToEndOfFile()
    p.waitUntilExit()
    guard p.terminationStatus == 0 else { throw BenchError("\(argv[0]) exited with \(p.terminationStatus)") }
    return String(decoding: data, as: UTF8.self)
}

/// Three decimals.
func fmt(_ x: Double) -> String { String(format: "%.3f", x) }

/// The file system `path` is on, from /proc/self/mounts (the longest mount point above it):
/// type, device and whether it is tmpfs-like, where fsync does nothing.
func fileSystem(of path: String) -> String {
    let absolute = URL(fileURLWithPath: path).standardizedFileURL.resolvingSymlinksInPath().path
    guard let mounts = try? String(contentsOfFile: "/proc/self/mounts", encoding: .utf8) else { return "unknown" }
    var best: (point: String, type: String, device: String)?
    for line in mounts.split(separator: "\n") {
        let f = line.split(separator: " ")
        guard f.count >= 3 else { continue }
        // Mount points escape spaces as \040.
        let point = f[1].replacingOccurrences(of: "\\040", with: " ")
        let inside = point == "/" || absolute == point || absolute.hasPrefix(point + "/")
        if inside && point.count >= (best?.point.count ?? -1) { best = (point, String(f[2]), String(f[0])) }
    }
    guard let b = best else { return "unknown" }
    let volatile = ["tmpfs", "ramfs"].contains(b.type) ? ", in memory: fsync is a no-op" : ""
    return "\(b.type) \(b.device) at \(b.point)\(volatile)"
}
