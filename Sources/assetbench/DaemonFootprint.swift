// The daemon footprint goals of scripts/bench.sh (part footprint) at M objects: time from exec to
// ready (READY=1 on a NOTIFY_SOCKET this process binds) on a restart with unchanged indexes, and
// resident memory right after ready and after a workload that touches the whole database.
// Subcommand `assetbench footprint --assetd BIN --config TOML --socket S --objects M`. Absolute
// goals: there is no baseline program, so the lines carry the goal, not a ratio.

import AssetStore
import Foundation
import Glibc

/// Starts assetd twice on a populated database and measures each start.
struct Footprint {
    /// The assetd binary, its configuration, and the control socket that names.
    let assetd: String
    let config: String
    let socket: String
    /// Objects in the database (checked with COUNT(*)).
    let objects: Int
    /// object.get requests in the workload.
    let gets: Int
    /// Bytes in a MiB.
    static let mib = 1024.0 * 1024.0

    /// `--assetd BIN --config TOML --socket S [--objects M] [--gets G]`.
    init(_ f: Flags) throws {
        assetd = try f.string("assetd")
        config = try f.string("config")
        socket = try f.string("socket")
        objects = try f.int("objects", 1_000_000)
        gets = try f.int("gets", 5000)
    }

    /// What /proc/PID/status says about memory, in bytes.
    struct Memory {
        var rss = 0
        var anon = 0
        var file = 0
        var shmem = 0
        var hwm = 0
        var threads = 0
        /// Proportional set sizes from smaps_rollup: a page mapped by several processes
        /// (the binary's libraries) counts in part here, whole in RssFile.
        var pssFile = 0
        var pssAnon = 0

        init(pid: Int32) {
            let rollup = (try? String(contentsOfFile: "/proc/\(pid)/smaps_rollup", encoding: .utf8)) ?? ""
            guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return }
            for line in (status + "\n" + rollup).split(separator: "\n") {
                let parts = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
                guard parts.count >= 2, let v = Int(parts[1]) else { continue }
                switch parts[0] {
                case "VmRSS:": rss = v * 1024
                case "RssAnon:": anon = v * 1024
                case "RssFile:": file = v * 1024
                case "RssShmem:": shmem = v * 1024
                case "VmHWM:": hwm = v * 1024
                case "Threads:": threads = v
                case "Pss_File:": pssFile = v * 1024
                case "Pss_Anon:": pssAnon = v * 1024
                default: break
                }
            }
        }

        /// One line: RSS and its parts, the peak, proportional sizes, threads.
        var text: String {
            func m(_ b: Int) -> String { String(format: "%.1f", Double(b) / Footprint.mib) }
            return "VmRSS=\(m(rss))MiB (RssAnon=\(m(anon)) RssFile=\(m(file)) RssShmem=\(m(shmem))) VmHWM=\(m(hwm))MiB"
                + " Pss_Anon=\(m(pssAnon))MiB Pss_File=\(m(pssFile))MiB threads=\(threads)"
        }
    }

    /// Two starts, each timed to READY=1, measured, loaded, measured again and stopped.
    func run() throws {
        print(
            "footprint: assetd on \(objects) objects (durability full, no extra indexes); time from exec to READY=1 on"
                + " NOTIFY_SOCKET, then memory from /proc/PID/status right after ready and after a workload (2 concurrent"
                + " full-scan aggregates \(SocketCommands.scanFunction) \(SocketCommands.scanClause), then \(gets) object.get of random"
                + " keys over 50 connections); absolute goals (ready <= 1 s on a restart, RSS <= 100 MiB), no baseline")
        fflush(nil)
        let notifyPath = (socket as NSString).deletingLastPathComponent + "/notify.sock"
        let notify = try NotifySocket(path: notifyPath)
        defer { notify.close() }
        var results = [(name: String, ready: Double, atReady: Memory, afterWork: Memory)]()
        let cold = dropPageCache()
        for name in [
            cold ? "first start, page cache dropped" : "first start (page cache not droppable here)", "restart, warm",
        ] {
            progress("\(name): starting assetd")
            let p = Process()
            p.executableURL = URL(fileURLWithPath: assetd)
            p.arguments = ["--config", config]
            var env = ProcessInfo.processInfo.environment
            env["NOTIFY_SOCKET"] = notifyPath
            p.environment = env
            let t0 = monotonicNanos()
            try p.run()
            defer {
                if p.isRunning {
                    p.terminate()
                    p.waitUntilExit()
                }
            }
            try notify.waitFor("READY=1", seconds: 120) { p.isRunning }
            let ready = Double(monotonicNanos() - t0) / 1e9
            let atReady = Memory(pid: p.processIdentifier)
            let ping = try LineConnection(path: socket).call(RPC.ping)
            try check(!RPC.isError(ping), "assetd answers ping once ready: \(RPC.text(ping))")
            progress("\(name): ready in \(fmt(ready)) s; workload")
            try workload()
            let afterWork = Memory(pid: p.processIdentifier)
            p.terminate()
            p.waitUntilExit()
            try check(p.terminationStatus == 0, "assetd exited with status 0 (got \(p.terminationStatus))")
            results.append((name, ready, atReady, afterWork))
        }
        for r in results {
            let goal = r.name.hasPrefix("restart") ? (r.ready <= 1 ? "ok" : "MISSED") : "info"
            let label = r.name.hasPrefix("restart") ? "footprint-ready-restart" : "footprint-ready-first"
            print("\(label) engine=\(fmt(r.ready))s baseline=none goal=<=1s \(goal)  (\(r.name))")
        }
        for r in results {
            let label = r.name.hasPrefix("restart") ? "restart" : "first"
            let anon = Double(r.afterWork.anon) / Footprint.mib
            let rss = Double(r.afterWork.rss) / Footprint.mib
            print(
                "footprint-rss-\(label) engine=\(String(format: "%.1f", rss))MiB (VmRSS; RssAnon \(String(format: "%.1f", anon))MiB)"
                    + " baseline=none goal=<=100MiB \(rss <= 100 ? "ok" : "MISSED")")
            print("  \(r.name): at ready: \(r.atReady.text)")
            print("  \(r.name): after the workload: \(r.afterWork.text)")
        }
        print(
            "  judged on VmRSS, all resident pages: RssAnon is the daemon's own memory, SQLite's page caches included"
                + " (no connection maps the database; the caches are bounded by a soft heap limit), RssFile mostly the binary"
                + " and its libraries")
        fflush(nil)
    }

    /// Two concurrent full-scan aggregates (one of them checks the count), then gets.
    private func workload() throws {
        let counted = try LineConnection(path: socket).call(RPC.aggregate(function: "COUNT(*)", clause: ""))
        let count = try JSONValue.parse(String(decoding: counted, as: UTF8.self))["result"]?["value"]?.intValue
        try check(count == Int64(objects), "the daemon holds \(objects) objects (COUNT(*) said \(RPC.text(counted)))")
        let request = RPC.aggregate(function: SocketCommands.scanFunction, clause: SocketCommands.scanClause)
        let scans = try closedLoop(socket: socket, connections: 2, requests: [request, request], driver: .threads) {
            reply, i in
            guard !RPC.isError(reply) else { throw BenchError("scan #\(i) failed: \(RPC.text(reply))") }
        }
        try check(scans.completed == 2, "both scans answered")
        var rng = SplitMix64(seed: 11)
        let requests = (0..<gets).map { _ in
            RPC.get(SocketCommands.collection, SocketCommands.key(Int.random(in: 0..<objects, using: &rng)))
        }
        let got = try closedLoop(socket: socket, connections: 50, requests: requests, driver: .poll) { reply, i in
            guard !RPC.isError(reply), !RPC.isNullResult(reply) else {
                throw BenchError("get #\(i): \(RPC.text(reply))")
            }
        }
        try check(got.completed == gets, "every get answered")
    }

    private func progress(_ s: String) { printError("[assetbench] footprint: " + s) }
}

/// A bound AF_UNIX datagram socket standing in for the service manager's NOTIFY_SOCKET.
final class NotifySocket {
    /// The socket, and the path it is bound to (removed by `close`).
    let fd: Int32
    let path: String

    /// Binds a datagram socket at `path`, replacing a stale one.
    init(path: String) throws {
        self.path = path
        unlink(path)
        fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw BenchError("socket: \(String(cString: strerror(errno)))") }
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: addr.sun_path) else {
            throw BenchError("notify socket path too long: \(path)")
        }
        withUnsafeMutableBytes(of: &addr.sun_path) { raw in
            for (i, b) in bytes.enumerated() { raw[i] = b }
        }
        let bound = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard bound == 0 else { throw BenchError("bind \(path): \(String(cString: strerror(errno)))") }
    }

    /// Waits until a datagram holding the line `state` arrives; polls every 10 ms for no
    /// longer, so the wake-up is the datagram's arrival, and checks `alive` meanwhile.
    func waitFor(_ state: String, seconds: Double, alive: () -> Bool) throws {
        let deadline = monotonicNanos() + UInt64(seconds * 1e9)
        var buffer = [UInt8](repeating: 0, count: 4096)
        while monotonicNanos() < deadline {
            var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let n = poll(&pfd, 1, 100)
            if n > 0 {
                let got = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
                if got > 0,
                    String(decoding: buffer[..<got], as: UTF8.self).split(separator: "\n").contains(Substring(state))
                {
                    return
                }
                continue
            }
            guard alive() else { throw BenchError("assetd exited before sending \(state)") }
        }
        throw BenchError("no \(state) within \(seconds) s")
    }

    /// Closes the socket and removes its path.
    func close() {
        Glibc.close(fd)
        unlink(path)
    }
}
