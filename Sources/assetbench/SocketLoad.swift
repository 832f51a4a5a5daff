// `assetbench socket-load --socket S --keys K [--n N] [--driver D] [--connections C]
// [--repeat R] [--daemon-pid P] [--puts PREFIX]`: the socket workload's object.get alone, N random keys of K stored ones, R
// times, to measure the load generator itself (its CPU a request, or its instructions under
// callgrind) without redis-server and the other workloads. With `--puts`, the durable puts'
// workload instead: N new objects a repeat (keys PREFIX, the repeat, a number), 100 owners in
// turn, to measure the daemon's put path (its threads' CPU) alone. Each repeat prints its rate,
// the CPU a request and the round trip's p50 and p99.

import Glibc

extension SocketCommands {
    /// The check of an object.get reply in every socket workload: not an error, not `null`.
    static func objectCheck(_ what: String) -> ReplyCheck {
        { reply, i in
            guard !RPC.isError(reply), !RPC.isNullResult(reply) else {
                throw BenchError("\(what) #\(i) did not return the object: \(RPC.text(reply))")
            }
        }
    }

    static func socketLoad(_ f: Flags) throws {
        let socket = try f.string("socket")
        let keys = try f.int("keys", 0)
        let n = try f.int("n", 50_000)
        let connections = try f.int("connections", 50)
        let repeats = max(1, try f.int("repeat", 1))
        let daemonPID = Int32(try f.int("daemon-pid", 0))
        guard keys > 0, let driver = ClientDriver(rawValue: (try? f.string("driver")) ?? "uv") else {
            throw BenchError("socket-load needs --keys K > 0; --driver is uv, poll or threads")
        }
        let puts = try? f.string("puts")
        var rng = SplitMix64(seed: 7)
        let gets = (0..<n).map { _ in RPC.get(collection, key(Int.random(in: 0..<keys, using: &rng))) }
        let putCheck: ReplyCheck = { reply, i in
            guard !RPC.isError(reply) else { throw BenchError("object.put #\(i) failed: \(RPC.text(reply))") }
        }
        let check = puts == nil ? objectCheck("object.get") : putCheck
        for round in 0..<repeats {
            let requests =
                puts.map { prefix in
                    (0..<n).map { i in
                        RPC.put(collection, prefix + pad(round, 3) + pad(i, 8), owner: Bench.owners[i % 100], n: i)
                    }
                } ?? gets
            let daemon0 = CPUSpent.process(daemonPID)
            let (user0, system0) = ownCPU()
            let r = try closedLoop(
                socket: socket, connections: connections, requests: requests, driver: driver, check: check)
            let (user1, system1) = ownCPU()
            let daemon = CPUSpent.process(daemonPID) - daemon0
            let us = { (s: Double) in String(format: "%.2f", s / Double(r.completed) * 1e6) }
            let what = puts == nil ? "get" : "put"
            print(
                "socket-load: \(driver.rawValue), \(r.completed) \(what)s in \(String(format: "%.3f", r.seconds)) s,"
                    + " \(Int(r.opsPerSecond))/s; client cpu a \(what) \(us(user1 - user0 + system1 - system0)) us"
                    + " (user \(us(user1 - user0)), system \(us(system1 - system0)))"
                    + String(format: "; round trip p50 %.3f ms, p99 %.3f ms", r.percentile(0.5), r.percentile(0.99))
                    + (daemonPID > 0 ? "; assetd cpu a \(what) \(us(daemon)) us" : ""))
        }
    }
}

/// This process's user and system CPU seconds.
private func ownCPU() -> (user: Double, system: Double) {
    var ru = rusage()
    getrusage(RUSAGE_SELF.rawValue, &ru)
    return (
        Double(ru.ru_utime.tv_sec) + Double(ru.ru_utime.tv_usec) / 1e6,
        Double(ru.ru_stime.tv_sec) + Double(ru.ru_stime.tv_usec) / 1e6
    )
}
