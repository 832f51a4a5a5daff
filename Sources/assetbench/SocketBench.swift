// The benchmark goals measured over the control socket of a running assetd, as subcommands
// that scripts/bench.sh calls around starting and stopping the daemon (and redis-server):
//
//   assetbench populate DB ROOT COUNT [--explain]   fill a database in-process (no daemon)
//   assetbench wait SOCKET SECONDS                   until a ping is answered
//   assetbench socket --socket S --redis R …         object.get / durable object.put vs redis-benchmark
//   assetbench socket-load --socket S --keys K …     the gets alone (the load generator's cost),
//                                                    or with --puts the durable puts alone
//   assetbench put-ceiling DB ROOT COUNT BATCH       the same puts through Store.write in-process
//   assetbench put-baseline DB COUNT GROUP …         the same puts on SQLite's C API, one sync a group
//   assetbench ping-scan --socket S …                ping latency while full-scan aggregates run
//
// Each prints its result lines on standard output and progress on standard error.

import AssetStore
import Foundation
import Glibc
import Synchronization

enum SocketCommands {
    /// Runs a subcommand and returns its exit status; nil if `arguments` name none.
    static func run(_ arguments: [String]) -> Int32? {
        guard arguments.count > 1 else { return nil }
        let rest = Array(arguments.dropFirst(2))
        do {
            switch arguments[1] {
            case "populate": try populate(rest)
            case "wait": try waitForDaemon(rest)
            case "socket": try SocketWorkloads(Flags(rest)).run()
            case "socket-load": try socketLoad(Flags(rest))
            case "ping-scan": try PingScan(Flags(rest)).run()
            case "expire": try ExpireBench(Flags(rest)).run()
            case "expire-cost": try ExpireCost(Flags(rest)).run()
            case "expire-overlap": try ExpireOverlap(Flags(rest)).run()
            case "access-flush": try AccessFlushCost(Flags(rest)).run()
            case "pending-edges": try PendingEdgeCost(Flags(rest)).run()
            case "lease-sweep": try LeaseSweep(Flags(rest)).run()
            case "eviction":
                let f = try Flags(rest)
                try EvictionBench(f).replay(trace: try f.string("trace"), capacity: Int64(try f.int("capacity", 0)))
            case "eviction-cost":
                let f = try Flags(rest)
                try EvictionBench(f).cost(objects: try f.int("objects", 100_000))
            case "footprint": try Footprint(Flags(rest)).run()
            case "put-ceiling": try putCeiling(rest)
            case "put-baseline": try putBaseline(rest)
            case "top100": try Bench.top100Only(Flags(rest))
            default: return nil
            }
            return 0
        } catch {
            printError("assetbench \(arguments[1]): \(error)")
            return 1
        }
    }

    /// The collection the socket workloads use, and its keys.
    static let collection = "bench"
    static func key(_ i: Int) -> String { "k" + pad(i, 8) }
    static func value(_ i: Int) -> JSONValue {
        .object(["owner": .string(Bench.owners[i % 100]), "n": .int(Int64(i))])
    }

    /// The full-scan aggregate: `created > 0` alone could use the created index, but the OR
    /// with a LIKE that has a leading wildcard leaves SQLite nothing but a scan of the table.
    static let scanFunction = "SUM(size)"
    static let scanClause = "WHERE created > 0 OR key LIKE '%x%'"

    /// `populate DB ROOT COUNT [--explain]`: COUNT objects `bench/k…` with small values and no
    /// files, 10,000 per write transaction, through AssetStore (the daemon is not running).
    static func populate(_ args: [String]) throws {
        guard args.count >= 3, let count = Int(args[2]), count >= 0 else {
            throw BenchError("usage: assetbench populate DB ROOT COUNT [--explain]")
        }
        let (path, root) = (args[0], args[1])
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        let store = try Store(path: path, configuration: StoreConfiguration(roots: [root]))
        defer { store.close() }
        let start = monotonicNanos()
        let batch = 10_000
        for first in stride(from: 0, to: count, by: batch) {
            try store.write { tx in
                for i in first..<min(first + batch, count) {
                    try tx.put(ObjectRef(collection, key(i)), value: value(i))
                }
            }
            if (first / batch) % 20 == 19 { printError("[assetbench] populate: \(first + batch) of \(count)") }
        }
        let objects = try store.read { try $0.objectCount() }
        try check(objects == count, "the store holds \(count) objects, not \(objects)")
        printError(
            "[assetbench] populate: \(count) objects in \(String(format: "%.1f", Double(monotonicNanos() - start) / 1e9)) s"
        )
        if args.contains("--explain") {
            let plan = try store.explain(clause: scanClause, function: scanFunction)
            print("scan: index.aggregate \(scanFunction) \(scanClause) -> plan: \(plan.joined(separator: "; "))")
            guard plan.contains(where: { $0.hasPrefix("SCAN") }) else {
                throw BenchError("the scan aggregate does not scan: \(plan)")
            }
            fflush(nil)
        }
    }

    /// `wait SOCKET SECONDS`: connects and pings until answered.
    static func waitForDaemon(_ args: [String]) throws {
        guard args.count == 2, let seconds = Double(args[1]) else {
            throw BenchError("usage: assetbench wait SOCKET SECONDS")
        }
        let deadline = monotonicNanos() + UInt64(seconds * 1e9)
        var last = "not tried"
        while monotonicNanos() < deadline {
            do {
                let reply = try LineConnection(path: args[0]).call(RPC.ping)
                if !RPC.isError(reply) { return }
                last = RPC.text(reply)
            } catch {
                last = "\(error)"
            }
            usleep(50_000)
        }
        throw BenchError("assetd did not answer on \(args[0]) within \(args[1]) s: \(last)")
    }
}

/// `--name value` options.
struct Flags {
    private var values: [String: String] = [:]

    init(_ args: [String]) throws {
        var i = 0
        while i < args.count {
            guard args[i].hasPrefix("--"), i + 1 < args.count else {
                throw BenchError("expected --name value, got \(args[i])")
            }
            values[String(args[i].dropFirst(2))] = args[i + 1]
            i += 2
        }
    }

    func string(_ name: String) throws -> String {
        guard let v = values[name] else { throw BenchError("--\(name) is required") }
        return v
    }

    func int(_ name: String, _ fallback: Int) throws -> Int {
        guard let v = values[name] else { return fallback }
        guard let i = Int(v), i >= 0 else { throw BenchError("--\(name) must be a whole number") }
        return i
    }

    func double(_ name: String, _ fallback: Double) throws -> Double {
        guard let v = values[name] else { return fallback }
        guard let d = Double(v), d > 0 else { throw BenchError("--\(name) must be a positive number") }
        return d
    }
}

/// object.get and durable object.put over the socket, `connections` clients with one request
/// in flight each, against redis-benchmark GET and SET on redis-server's Unix socket with as
/// many clients. The durable puts' goal is against a second redis-server that appends and
/// fsyncs every write before answering (`appendfsync always`), the peer a user wanting
/// durability would pick; against the plain one it is information. The puts' goal lines have
/// 100 owners in turn; the same puts from one owner follow for information. object.get with
/// `touch` and object.touch are measured against the plain object.get of the same run and
/// client; so are touching gets of Zipf-distributed keys (alpha 0.9), for information: a
/// cache's hits are skewed, and one second's touches then fall on fewer objects. Each round runs every workload once, gets and touches in full and the puts' share,
/// in an order rotated from round to round (SocketStep.order); each ratio is the median of the
/// rounds' own ratios, which are printed beside it.
struct SocketWorkloads {
    let socket: String
    let redisSocket: String
    /// Objects k00000000… in the daemon's store (made by `populate`).
    let keys: Int
    /// object.get requests a round, and redis-benchmark's -n a round.
    let n: Int
    /// object.put requests in all at most, and the seconds they may take in all: split over the
    /// rounds, so the store grows by as much however many rounds run.
    let putN: Int
    let putSeconds: Double
    /// Touching gets and touches a round at most, each, and the seconds each may take in all.
    let touchN: Int
    let touchSeconds: Double
    let connections: Int
    let rounds: Int
    /// The turns the gets and Redis's GETs take in a round.
    static let getTurns = 4
    let driver: ClientDriver
    /// A folder on the database's file system, for the fsync probe.
    let probeFolder: String
    /// assetd's and redis-server's process ids, for their CPU time (0: not measured).
    let daemonPID: Int32
    let redisPID: Int32
    /// The redis-server with `appendonly yes`, `appendfsync always`: its socket, process id
    /// and the folder its append-only files are in.
    let durableRedisSocket: String
    let durableRedisPID: Int32
    let durableRedisFolder: String
    /// Where to write the durable puts' mean commit size and rate, for `put-baseline`.
    let putBatchFile: String?
    /// The skew of the Zipf-distributed touching gets (information beside the uniform ones).
    static let zipfAlpha = 0.9

    init(_ f: Flags) throws {
        socket = try f.string("socket")
        redisSocket = try f.string("redis")
        keys = try f.int("keys", 100_000)
        n = try f.int("n", 100_000)
        putN = try f.int("put-n", n / 2)
        putSeconds = try f.double("put-seconds", 60)
        touchN = try f.int("touch-n", putN)
        touchSeconds = try f.double("touch-seconds", putSeconds)
        connections = try f.int("connections", 50)
        rounds = max(1, try f.int("rounds", 3))
        guard let d = ClientDriver(rawValue: (try? f.string("driver")) ?? "uv") else {
            throw BenchError("--driver is uv, poll or threads")
        }
        driver = d
        probeFolder = try f.string("probe-folder")
        daemonPID = Int32(try f.int("daemon-pid", 0))
        redisPID = Int32(try f.int("redis-pid", 0))
        durableRedisSocket = try f.string("redis-durable")
        durableRedisPID = Int32(try f.int("redis-durable-pid", 0))
        durableRedisFolder = try f.string("redis-durable-folder")
        putBatchFile = try? f.string("put-batch-file")
        try check(
            keys > 0 && n > 0 && putN >= rounds && touchN > 0 && connections > 0, "positive sizes")
    }

    func run() throws {
        let redisVersion =
            (try? runTool(["redis-server", "--version"]))?.split(separator: " ").first { $0.hasPrefix("v=") } ?? "v=?"
        print(
            "socket: \(connections) connections, one request in flight each; client: \(driver.rawValue)"
                + " (\(driver.summary))"
                + "; assetd UV_THREADPOOL_SIZE=\(ProcessInfo.processInfo.environment["UV_THREADPOOL_SIZE"] ?? "unset (assetd's own default)")"
                + "; baseline: redis-server \(redisVersion.dropFirst(2)) --save '' --appendonly no, redis-benchmark -s SOCK -c \(connections) -t get,set -q"
                + "; durable baseline: redis-server --appendonly yes --appendfsync always, its files on"
                + " \(fileSystem(of: durableRedisFolder)), redis-benchmark -s SOCK -c \(connections) -t set -q"
        )
        let durable = try durableRedisSettings()
        print("socket: durable redis-server reports \(durable)")
        print(
            "socket: \(rounds) rounds, each running every workload once in an order rotated from round to round;"
                + " each ratio is the median of the rounds' ratios (the rounds' own follow it);"
                + " get = object.get of random keys among \(keys) stored objects, \(n) requests a round in"
                + " \(SocketWorkloads.getTurns) turns with redis-benchmark's GET; ping = \(n / 2) pings"
                + " a round (info); put = object.put of new"
                + " keys with durability full (one fsync per commit), up to \(putN) requests or \(Int(putSeconds)) s in all,"
                + " owners 100 in turn, then as many from one owner (info); get-touch = object.get with touch,"
                + " touch = object.touch, each of random stored keys, up to \(touchN) requests a round or \(Int(touchSeconds)) s in all,"
                + " baseline the same round's get; get-touch-zipf = as get-touch, keys Zipf-distributed"
                + " (alpha \(SocketWorkloads.zipfAlpha), info)")
        fflush(nil)

        var rng = SplitMix64(seed: 7)
        let getRequests = (0..<n).map { _ in
            RPC.get(SocketCommands.collection, SocketCommands.key(Int.random(in: 0..<keys, using: &rng)))
        }
        let getTouchRequests = (0..<touchN).map { _ in
            RPC.getTouching(SocketCommands.collection, SocketCommands.key(Int.random(in: 0..<keys, using: &rng)))
        }
        let touchRequests = (0..<touchN).map { _ in
            RPC.touch(SocketCommands.collection, SocketCommands.key(Int.random(in: 0..<keys, using: &rng)))
        }
        let zipf = ZipfKeys(count: keys, alpha: SocketWorkloads.zipfAlpha, seed: 11)
        let zipfTouchRequests = (0..<touchN).map { _ in
            RPC.getTouching(SocketCommands.collection, SocketCommands.key(zipf.next(using: &rng)))
        }
        let putRequests = (0..<putN).map { i in
            RPC.put(SocketCommands.collection, "p" + pad(i, 8), owner: Bench.owners[i % 100], n: i)
        }
        // The same puts from one owner (information): a new object adds an entry at its owner's
        // end of the two per-owner indexes, so 100 owners dirty up to two pages per put in each
        // commit where one owner dirties two in all. The difference is what those pages cost.
        let oneOwnerRequests = (0..<putN).map { i in
            RPC.put(SocketCommands.collection, "q" + pad(i, 8), owner: Bench.owners[0], n: i)
        }
        let getCheck = SocketCommands.objectCheck("object.get")
        let getTouchCheck = SocketCommands.objectCheck("object.get with touch")
        let touchCheck: ReplyCheck = { reply, i in
            guard !RPC.isError(reply) else { throw BenchError("object.touch #\(i) failed: \(RPC.text(reply))") }
        }
        // The commit numbers the puts were acknowledged with: their count gives the batch size.
        let putCommits = Mutex(Set<Int64>())
        let putCheck: ReplyCheck = { reply, i in
            guard !RPC.isError(reply) else { throw BenchError("object.put #\(i) failed: \(RPC.text(reply))") }
            if let commit = RPC.commitNumber(reply) { putCommits.withLock { _ = $0.insert(commit) } }
        }
        let oneOwnerCommits = Mutex(Set<Int64>())
        let oneOwnerCheck: ReplyCheck = { reply, i in
            guard !RPC.isError(reply) else {
                throw BenchError("object.put #\(i) of one owner failed: \(RPC.text(reply))")
            }
            if let commit = RPC.commitNumber(reply) { oneOwnerCommits.withLock { _ = $0.insert(commit) } }
        }

        // Warm-up, untimed: connections, the pool's threads and readers, the page cache.
        progress("warm-up")
        _ = try closedLoop(
            socket: socket, connections: connections, requests: Array(getRequests.prefix(5000)), driver: driver,
            check: getCheck)
        _ = try runRedis(socket: redisSocket, tests: ["GET", "SET"], n: 5000)
        _ = try runRedis(socket: durableRedisSocket, tests: ["SET"], n: 5000)
        if daemonPID > 0 { print("socket: assetd runs \(CPUSpent.threads(daemonPID)) threads after the warm-up") }

        // Each round's redis-benchmark rates, requests/s.
        var redisGet = [Double]()
        var redisSet = [Double]()
        var durableSet = [Double]()
        var durableSetTotal = (ops: 0, seconds: 0.0)
        var getTouches = [LoadResult]()
        var touches = [LoadResult]()
        var touchCPU = CPUSpent()
        var zipfTouches = [LoadResult]()
        var zipfCPU = CPUSpent()
        var durableCPU = CPUSpent()
        var gets = [LoadResult]()
        var pings = [LoadResult]()
        var pingCPU = CPUSpent()
        let pingCheck: ReplyCheck = { reply, i in
            guard !RPC.isError(reply) else { throw BenchError("ping #\(i) failed: \(RPC.text(reply))") }
        }
        let pingRequests = [[UInt8]](repeating: RPC.ping, count: max(1, n / 2))
        var puts = [LoadResult]()
        // The daemon's WAL syncs during the durable puts (one sync may cover several commits).
        var putSyncs = 0
        var oneOwnerPuts = [LoadResult]()
        // CPU seconds: (server, client) for gets, puts, and redis-benchmark's GET+SET runs.
        var getCPU = CPUSpent()
        var putCPU = CPUSpent()
        var redisCPU = CPUSpent()
        // redis-benchmark's GET turns alone, to set the two load generators side by side.
        var redisGetCPU = CPUSpent()
        var orders = [String]()
        for round in 0..<rounds {
            let putSlice = Array(putRequests[(round * putN / rounds)..<((round + 1) * putN / rounds)])
            let oneOwnerSlice = Array(oneOwnerRequests[(round * putN / rounds)..<((round + 1) * putN / rounds)])
            let say = { (s: String) in progress("round \(round + 1)/\(rounds): " + s) }
            // One closed-loop run; with `seconds` (in all), stopped after this round's share.
            let load = {
                (requests: [[UInt8]], seconds: Double?, check: @escaping ReplyCheck) in
                try closedLoop(
                    socket: socket, connections: connections, requests: requests, driver: driver,
                    deadline: seconds.map { monotonicNanos() + UInt64($0 / Double(rounds) * 1e9) }, check: check)
            }
            // ping is answered on the event loop from memory: the floor of the protocol, the
            // loop and the client, without the thread pool and the store.
            let ping = SocketStep("ping") {
                say("assetd ping x\(pingRequests.count)")
                try pingCPU.measure(server: daemonPID) { pings.append(try load(pingRequests, nil, pingCheck)) }
            }
            // The goal's two sides in turns of a quarter each, so a load that comes or goes
            // within the round weighs on both alike.
            let get = SocketStep("get+redis-get") {
                var parts = [LoadResult]()
                var redisSeconds = 0.0
                for turn in 0..<SocketWorkloads.getTurns {
                    let slice = Array(
                        getRequests[(turn * n / SocketWorkloads.getTurns)..<((turn + 1) * n / SocketWorkloads.getTurns)]
                    )
                    let assetd = {
                        say("assetd object.get x\(slice.count) (turn \(turn + 1))")
                        try getCPU.measure(server: daemonPID) { parts.append(try load(slice, nil, getCheck)) }
                    }
                    let redis = {
                        say("redis-benchmark -t get -n \(slice.count) (turn \(turn + 1))")
                        let r = try redisCPU.measure(server: redisPID, clientIsChild: true) {
                            try redisGetCPU.measure(server: redisPID, clientIsChild: true) {
                                try runRedis(socket: redisSocket, tests: ["GET"], n: slice.count)
                            }
                        }
                        redisSeconds += Double(slice.count) / r[0]
                    }
                    if turn % 2 == 0 {
                        try assetd()
                        try redis()
                    } else {
                        try redis()
                        try assetd()
                    }
                }
                gets.append(merge(parts))
                redisGet.append(Double(n) / redisSeconds)
            }
            let getTouch = SocketStep("get-touch") {
                say("assetd object.get with touch up to \(getTouchRequests.count) or \(Int(touchSeconds) / rounds) s")
                try touchCPU.measure(server: daemonPID) {
                    getTouches.append(try load(getTouchRequests, touchSeconds, getTouchCheck))
                }
            }
            let getTouchZipf = SocketStep("get-touch-zipf") {
                say(
                    "assetd object.get with touch, Zipf keys, up to \(zipfTouchRequests.count) or \(Int(touchSeconds) / rounds) s"
                )
                try zipfCPU.measure(server: daemonPID) {
                    zipfTouches.append(try load(zipfTouchRequests, touchSeconds, getTouchCheck))
                }
            }
            let touch = SocketStep("touch") {
                say("assetd object.touch up to \(touchRequests.count) or \(Int(touchSeconds) / rounds) s")
                touches.append(try load(touchRequests, touchSeconds, touchCheck))
            }
            let put = SocketStep("put") {
                say("assetd object.put up to \(putSlice.count) or \(Int(putSeconds) / rounds) s")
                let syncs0 = try SocketCommands.walSyncs(socket)
                try putCPU.measure(server: daemonPID) { puts.append(try load(putSlice, putSeconds, putCheck)) }
                putSyncs += try SocketCommands.walSyncs(socket) - syncs0
            }
            let oneOwner = SocketStep("put-one-owner") {
                say("assetd object.put of one owner up to \(oneOwnerSlice.count) or \(Int(putSeconds) / rounds) s")
                oneOwnerPuts.append(try load(oneOwnerSlice, putSeconds, oneOwnerCheck))
            }
            let redis = SocketStep("redis-set") {
                say("redis-benchmark -t set -n \(n)")
                let r = try redisCPU.measure(server: redisPID, clientIsChild: true) {
                    try runRedis(socket: redisSocket, tests: ["SET"], n: n)
                }
                redisSet.append(r[0])
            }
            // As many SETs as there are puts at most: enough for a steady rate, and the
            // append-only file stays small.
            let durableN = max(1, min(n, putSlice.count))
            let durable = SocketStep("redis-durable") {
                say("redis-benchmark -t set -n \(durableN) (appendfsync always)")
                let d = try durableCPU.measure(server: durableRedisPID, clientIsChild: true) {
                    try runRedis(socket: durableRedisSocket, tests: ["SET"], n: durableN)
                }
                durableSet.append(d[0])
                durableSetTotal.ops += durableN
                durableSetTotal.seconds += Double(durableN) / d[0]
            }
            let order = SocketStep.order(
                [redis, get, getTouch, touch, getTouchZipf, ping, durable, put, oneOwner], round: round, of: rounds)
            orders.append(order.map(\.name).joined(separator: ", "))
            say("in this order: " + orders[round])
            for step in order { try step.run() }
        }
        try verifyPuts(puts, putRequests)
        print("socket: the rounds' orders: " + orders.enumerated().map { "\($0 + 1): \($1)" }.joined(separator: "; "))

        let getAll = merge(gets)
        let redisGetTotal = (ops: n * rounds, seconds: redisGet.reduce(0) { $0 + Double(n) / $1 })
        let redisSetTotal = (ops: n * rounds, seconds: redisSet.reduce(0) { $0 + Double(n) / $1 })
        // Each ratio is the median of the rounds' own: a round's sides ran minutes apart at
        // most, so a load that came and went moves one round, not the verdict.
        func perRound(_ engine: [LoadResult], _ baseline: [Double]) -> [Double] {
            zip(engine, baseline).map { $0.opsPerSecond / $1 }
        }
        let pingAll = merge(pings)
        let putAll = merge(puts)
        let oneOwnerAll = merge(oneOwnerPuts)
        emit(
            ResultLine(
                name: "socket-get", engine: .throughput(ops: getAll.completed, seconds: getAll.seconds),
                baseline: .throughput(ops: redisGetTotal.ops, seconds: redisGetTotal.seconds), goal: .atLeast(0.75),
                rounds: perRound(gets, redisGet)))
        print(
            "  socket-get: \(getAll.completed) requests in \(fmt(getAll.seconds)) s; round trip p50=\(fmt(getAll.percentile(0.5)))ms"
                + " p99=\(fmt(getAll.percentile(0.99)))ms max=\(fmt(getAll.percentile(1)))ms")
        let getTouchAll = merge(getTouches)
        let zipfAll = merge(zipfTouches)
        /// A touching workload's line against the same rounds' plain gets, and its detail line.
        func touching(_ name: String, _ results: [LoadResult], _ goal: Goal, note: String = "") {
            let all = merge(results)
            emit(
                ResultLine(
                    name: name, engine: .throughput(ops: all.completed, seconds: all.seconds),
                    baseline: .throughput(ops: getAll.completed, seconds: getAll.seconds), goal: goal,
                    rounds: perRound(results, gets.map(\.opsPerSecond))))
            print(
                "  \(name) (\(note)baseline: socket-get above): \(all.completed) of \(touchN * rounds) requests in \(fmt(all.seconds)) s"
                    + (results.contains(where: \.stoppedAtDeadline)
                        ? " (stopped at the \(Int(touchSeconds)) s limit)" : "")
                    + "; round trip p50=\(fmt(all.percentile(0.5)))ms p99=\(fmt(all.percentile(0.99)))ms")
        }
        touching("socket-get-touch", getTouches, .atLeast(0.9))
        touching("socket-touch", touches, .atLeast(0.8))
        touching(
            "socket-get-touch-zipf", zipfTouches, .none,
            note: "info, no goal; keys Zipf-distributed, alpha \(SocketWorkloads.zipfAlpha); ")
        emit(
            ResultLine(
                name: "socket-ping", engine: .throughput(ops: pingAll.completed, seconds: pingAll.seconds),
                baseline: .throughput(ops: redisGetTotal.ops, seconds: redisGetTotal.seconds), goal: .none,
                rounds: perRound(pings, redisGet)))
        print(
            "  socket-ping (info, no goal; vs redis GET): answered on assetd's loop without the pool or the store;"
                + " round trip p50=\(fmt(pingAll.percentile(0.5)))ms p99=\(fmt(pingAll.percentile(0.99)))ms")
        emit(
            ResultLine(
                name: "socket-put-durable", engine: .throughput(ops: putAll.completed, seconds: putAll.seconds),
                baseline: .throughput(ops: durableSetTotal.ops, seconds: durableSetTotal.seconds), goal: .atLeast(0.6),
                rounds: perRound(puts, durableSet)))
        print(
            "  socket-put-durable (baseline: redis-benchmark SET on redis-server --appendonly yes --appendfsync always):"
                + " \(durableSetTotal.ops) SETs in \(fmt(durableSetTotal.seconds)) s; its append-only file holds \(durableRedisAOF())"
                + " on \(fileSystem(of: durableRedisFolder))")
        emit(
            ResultLine(
                name: "socket-put", engine: .throughput(ops: putAll.completed, seconds: putAll.seconds),
                baseline: .throughput(ops: redisSetTotal.ops, seconds: redisSetTotal.seconds), goal: .none,
                rounds: perRound(puts, redisSet)))
        let probe = try fsyncProbe()
        print(
            "  socket-put (info, no goal; vs redis SET without persistence): \(putAll.completed) of \(putN) requests in \(fmt(putAll.seconds)) s"
                + (puts.contains(where: \.stoppedAtDeadline) ? " (stopped at the \(Int(putSeconds)) s limit)" : "")
                + "; round trip p50=\(fmt(putAll.percentile(0.5)))ms p99=\(fmt(putAll.percentile(0.99)))ms;"
                + " \(putCommits.withLock { $0.count }) commits (\(String(format: "%.1f", Double(putAll.completed) / Double(max(1, putCommits.withLock { $0.count })))) puts each),"
                + " \(putSyncs) WAL syncs (\(String(format: "%.1f", Double(putAll.completed) / Double(max(1, putSyncs)))) puts each);"
                + " fdatasync of 4 KiB on this file system (\(fileSystem(of: probeFolder))): p50=\(fmt(probe.p50))ms p99=\(fmt(probe.p99))ms"
                + " (one at a time: at most \(Int((1000 / probe.p50).rounded())) commits/s if each waits for one)")
        if let putBatchFile {
            let perCommit = Double(putAll.completed) / Double(max(1, putCommits.withLock { $0.count }))
            let perSync = Double(putAll.completed) / Double(max(1, putSyncs))
            try "\(perSync) \(putAll.opsPerSecond) \(perCommit)\n".write(
                toFile: putBatchFile, atomically: true, encoding: .utf8)
        }
        emit(
            ResultLine(
                name: "socket-put-one-owner",
                engine: .throughput(ops: oneOwnerAll.completed, seconds: oneOwnerAll.seconds),
                baseline: .throughput(ops: redisSetTotal.ops, seconds: redisSetTotal.seconds), goal: .none,
                rounds: perRound(oneOwnerPuts, redisSet)))
        print(
            "  socket-put-one-owner (info, no goal): the same puts, all from one owner instead of 100;"
                + " round trip p50=\(fmt(oneOwnerAll.percentile(0.5)))ms p99=\(fmt(oneOwnerAll.percentile(0.99)))ms;"
                + " \(String(format: "%.1f", Double(oneOwnerAll.completed) / Double(max(1, oneOwnerCommits.withLock { $0.count })))) puts a commit"
        )
        func us(_ seconds: Double, _ requests: Int, decimals: Int = 0) -> String {
            seconds.isNaN ? "?" : String(format: "%.\(decimals)fus", seconds / Double(requests) * 1e6)
        }
        print(
            "  cpu per request (user+system): assetd ping=\(us(pingCPU.server, pingAll.completed)) get=\(us(getCPU.server, getAll.completed))"
                + " put=\(us(putCPU.server, putAll.completed)) get-touch=\(us(touchCPU.server, getTouchAll.completed))"
                + " get-touch-zipf=\(us(zipfCPU.server, zipfAll.completed));"
                + " assetbench client ping=\(us(pingCPU.client, pingAll.completed))"
                + " get=\(us(getCPU.client, getAll.completed)) put=\(us(putCPU.client, putAll.completed));"
                + " redis-server GET+SET=\(us(redisCPU.server, redisGetTotal.ops + redisSetTotal.ops));"
                + " redis-benchmark GET+SET=\(us(redisCPU.client, redisGetTotal.ops + redisSetTotal.ops));"
                + " durable redis-server SET=\(us(durableCPU.server, durableSetTotal.ops))")
        func us1(_ seconds: Double, _ requests: Int) -> String { us(seconds, requests, decimals: 1) }
        print(
            "  load generators, cpu per request (user+system), same turns: assetbench (\(driver.rawValue))"
                + " get=\(us1(getCPU.client, getAll.completed)), redis-benchmark GET=\(us1(redisGetCPU.client, redisGetTotal.ops))"
                + "; servers: assetd get=\(us1(getCPU.server, getAll.completed)),"
                + " redis-server GET=\(us1(redisGetCPU.server, redisGetTotal.ops))")
        print(
            "  other processes on the machine used on average: \(String(format: "%.2f", getCPU.others)) cores during gets,"
                + " \(String(format: "%.2f", putCPU.others)) during puts, \(String(format: "%.2f", redisCPU.others)) during redis-benchmark"
                + " (of \(ProcessInfo.processInfo.activeProcessorCount))")
        fflush(nil)
    }

    /// The puts that were answered are in the store: reads back a sample of them.
    private func verifyPuts(_ puts: [LoadResult], _ requests: [[UInt8]]) throws {
        let conn = try LineConnection(path: socket)
        var sampled = 0
        for (round, r) in puts.enumerated() where r.completed > 0 {
            let first = round * putN / rounds
            // Requests are sent in order, so the first `completed - connections` were all answered.
            for i in stride(from: first, to: first + max(1, r.completed - connections), by: max(1, r.completed / 20)) {
                let reply = try conn.call(RPC.get(SocketCommands.collection, "p" + pad(i, 8)))
                try check(!RPC.isError(reply) && !RPC.isNullResult(reply), "put key p\(pad(i, 8)) reads back")
                sampled += 1
            }
        }
        try check(sampled > 0, "some puts were answered")
    }

    private func merge(_ results: [LoadResult]) -> LoadResult {
        LoadResult(
            completed: results.reduce(0) { $0 + $1.completed }, seconds: results.reduce(0) { $0 + $1.seconds },
            latencies: results.flatMap(\.latencies), stoppedAtDeadline: results.contains { $0.stoppedAtDeadline })
    }

    /// redis-benchmark's requests/s for each of `tests`, in order, at `n` requests each.
    private func runRedis(socket: String, tests: [String], n: Int) throws -> [Double] {
        let out = try runTool([
            "redis-benchmark", "-s", socket, "-c", String(connections), "-n", String(n), "-t",
            tests.map { $0.lowercased() }.joined(separator: ","), "-q",
        ])
        func rate(_ test: String) throws -> Double {
            // -q prints progress ending in \r, then "GET: 93457.95 requests per second, p50=…".
            for line in out.split(whereSeparator: { $0 == "\n" || $0 == "\r" }) where line.hasPrefix(test + ": ") {
                if line.contains("requests per second"),
                    let v = Double(line.dropFirst(test.count + 2).prefix { $0 != " " })
                {
                    return v
                }
            }
            throw BenchError("no \(test) requests per second in redis-benchmark's output: \(out)")
        }
        return try tests.map(rate)
    }

    /// The durable redis-server's own word that it appends and fsyncs every write, and where:
    /// a baseline that only looked durable would flatter assetd.
    private func durableRedisSettings() throws -> String {
        func config(_ name: String) throws -> String {
            let out = try runTool(["redis-cli", "-s", durableRedisSocket, "config", "get", name])
            let lines = out.split(separator: "\n")
            guard lines.count >= 2 else { throw BenchError("redis-cli config get \(name): \(out)") }
            return String(lines[1])
        }
        let (appendonly, appendfsync, dir) = (try config("appendonly"), try config("appendfsync"), try config("dir"))
        try check(
            appendonly == "yes" && appendfsync == "always",
            "the durable redis-server runs appendonly yes, appendfsync always (it says \(appendonly), \(appendfsync))")
        return "appendonly=\(appendonly) appendfsync=\(appendfsync) dir=\(dir) (\(fileSystem(of: dir)))"
    }

    /// The durable redis-server's append-only bytes and last write status (INFO persistence),
    /// to show the SETs went to its file.
    private func durableRedisAOF() -> String {
        guard let out = try? runTool(["redis-cli", "-s", durableRedisSocket, "info", "persistence"]) else { return "?" }
        // INFO ends its lines with \r\n, which Swift reads as one Character.
        let fields = Dictionary(
            out.split(whereSeparator: \.isNewline).compactMap { line -> (String, String)? in
                guard let colon = line.firstIndex(of: ":") else { return nil }
                return (String(line[..<colon]), String(line[line.index(after: colon)...]))
            }, uniquingKeysWith: { a, _ in a })
        return
            "\(fields["aof_current_size"] ?? "?") bytes (aof_last_write_status \(fields["aof_last_write_status"] ?? "?"))"
    }

    /// The latency of an 8-byte-aligned 4 KiB overwrite plus fdatasync, 100 times, next to the database.
    private func fsyncProbe() throws -> (p50: Double, p99: Double) {
        let path = probeFolder + "/fsync-probe"
        let fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw BenchError("open \(path): \(String(cString: strerror(errno)))") }
        defer {
            close(fd)
            unlink(path)
        }
        let block = [UInt8](repeating: 0x5a, count: 4096)
        for i in 0..<64 { _ = block.withUnsafeBytes { pwrite(fd, $0.baseAddress, 4096, off_t(i * 4096)) } }
        fsync(fd)
        var samples = [UInt64]()
        for i in 0..<100 {
            let t0 = monotonicNanos()
            _ = block.withUnsafeBytes { pwrite(fd, $0.baseAddress, 4096, off_t((i % 64) * 4096)) }
            guard fdatasync(fd) == 0 else { throw BenchError("fdatasync: \(String(cString: strerror(errno)))") }
            samples.append(monotonicNanos() - t0)
        }
        return (LoadResult.percentile(samples, 0.5), LoadResult.percentile(samples, 0.99))
    }

    private func emit(_ line: ResultLine) {
        print(line.text)
        fflush(nil)
    }

    private func progress(_ s: String) { printError("[assetbench] socket: " + s) }
}

/// `ping` round trips, one every `interval`, from one client while `scanners` clients each
/// run the full-scan aggregate back to back over the daemon's objects. The goal is
/// absolute (p99 < 10 ms), so there is no baseline; the same pings with no scan running
/// are printed for reference.
struct PingScan {
    let socket: String
    let objects: Int
    let seconds: Double
    let scanners: Int
    let intervalNanos: UInt64
    let daemonPID: Int32

    init(_ f: Flags) throws {
        socket = try f.string("socket")
        daemonPID = Int32(try f.int("daemon-pid", 0))
        objects = try f.int("objects", 1_000_000)
        seconds = try f.double("seconds", 5)
        scanners = try f.int("scanners", 2)
        intervalNanos = UInt64(try f.double("interval-ms", 1) * 1e6)
    }

    func run() throws {
        print(
            "ping-scan: \(scanners) clients run index.aggregate \(SocketCommands.scanFunction) \(SocketCommands.scanClause)"
                + " back to back over \(objects) objects while one client pings every \(fmt(Double(intervalNanos) / 1e6)) ms"
                + " for \(fmt(seconds)) s; UV_THREADPOOL_SIZE=\(ProcessInfo.processInfo.environment["UV_THREADPOOL_SIZE"] ?? "unset (assetd's own default)");"
                + " the goal is absolute, so there is no baseline (idle pings are shown for reference)")
        fflush(nil)
        let counted = try LineConnection(path: socket).call(RPC.aggregate(function: "COUNT(*)", clause: ""))
        let count = try JSONValue.parse(String(decoding: counted, as: UTF8.self))["result"]?["value"]?.intValue
        try check(count == Int64(objects), "the daemon holds \(objects) objects (COUNT(*) said \(RPC.text(counted)))")

        let pinger = try LineConnection(path: socket)
        printError("[assetbench] ping-scan: idle pings")
        let idle = try pings(pinger, for: 1)

        printError("[assetbench] ping-scan: starting \(scanners) scanners")
        let stop = Atomic<Bool>(false)
        let finished = Atomic<Int>(0)
        let scans = Mutex<[(start: UInt64, end: UInt64, scanner: Int)]>([])
        let failure = Mutex<String?>(nil)
        let request = RPC.aggregate(function: SocketCommands.scanFunction, clause: SocketCommands.scanClause)
        let conns = UnsafeTransfer(try (0..<scanners).map { _ in try LineConnection(path: socket) })
        for s in 0..<scanners {
            Thread {
                let conn = conns.value[s]
                do {
                    while !stop.load(ordering: .relaxed) {
                        let t0 = monotonicNanos()
                        let reply = try conn.call(request)
                        let t1 = monotonicNanos()
                        guard !RPC.isError(reply),
                            reply.starts(with: Array("{\"id\":1,\"jsonrpc\":\"2.0\",\"result\":{\"value\":".utf8))
                        else {
                            throw BenchError("the scan aggregate failed: \(RPC.text(reply))")
                        }
                        scans.withLock { $0.append((t0, t1, s)) }
                    }
                } catch {
                    failure.withLock { $0 = $0 ?? "\(error)" }
                }
                finished.add(1, ordering: .relaxed)
            }.start()
        }
        // Let both scans get under way (a scan takes far longer than this).
        usleep(200_000)
        printError("[assetbench] ping-scan: pinging for \(fmt(seconds)) s")
        var cpu = CPUSpent()
        let window0 = monotonicNanos()
        let busy = try cpu.measure(server: daemonPID) { try pings(pinger, for: seconds) }
        let window1 = monotonicNanos()
        stop.store(true, ordering: .relaxed)
        while finished.load(ordering: .relaxed) < scanners { usleep(10_000) }
        if let f = failure.withLock({ $0 }) { throw BenchError(f) }

        let all = scans.withLock { $0 }
        // How much of the ping window each scanner spent inside a scan (the gaps between its
        // scans are one round trip), and the scans that finished inside it.
        let coverage = (0..<scanners).map { s -> Double in
            let inside = all.filter { $0.scanner == s }.reduce(UInt64(0)) { acc, r in
                let a = max(r.start, window0)
                let b = min(r.end, window1)
                return acc + (b > a ? b - a : 0)
            }
            return Double(inside) / Double(window1 - window0)
        }
        let scanTimes = all.map { $0.end - $0.start }
        let p99 = LoadResult.percentile(busy, 0.99)
        let verdict = p99 < 10 ? "ok" : "MISSED"
        print("ping-p99-during-scan engine=\(fmt(p99))ms baseline=none goal=<10ms \(verdict)")
        print(
            "  during scans: \(busy.count) pings p50=\(fmt(LoadResult.percentile(busy, 0.5)))ms p99=\(fmt(p99))ms"
                + " max=\(fmt(LoadResult.percentile(busy, 1)))ms; \(all.count) scans, each p50=\(fmt(LoadResult.percentile(scanTimes, 0.5)))ms"
                + " max=\(fmt(LoadResult.percentile(scanTimes, 1)))ms; each scanner inside a scan for"
                + " \(coverage.map { String(format: "%.0f%%", $0 * 100) }.joined(separator: ", ")) of the ping window")
        print(
            "  during the ping window: assetd (\(CPUSpent.threads(daemonPID)) threads) used \(String(format: "%.2f", cpu.server / cpu.wall)) cores,"
                + " assetbench \(String(format: "%.2f", cpu.client / cpu.wall)), other processes \(String(format: "%.2f", cpu.others))"
                + " (of \(ProcessInfo.processInfo.activeProcessorCount))")
        print(
            "  idle (reference): \(idle.count) pings p50=\(fmt(LoadResult.percentile(idle, 0.5)))ms"
                + " p99=\(fmt(LoadResult.percentile(idle, 0.99)))ms max=\(fmt(LoadResult.percentile(idle, 1)))ms")
        if coverage.contains(where: { $0 < 0.9 }) {
            print(
                "  warning: a scanner spent less than 90% of the ping window inside a scan (scans this short are"
                    + " mostly round trips): use more objects (M)")
        }
        fflush(nil)
        try check(coverage.allSatisfy { $0 > 0 }, "every scanner ran scans during the ping window")
    }

    /// Pings every `intervalNanos` for `seconds`; returns each round trip (ns). A late reply
    /// delays the next ping; missed ticks are not made up with a burst.
    private func pings(_ conn: LineConnection, for seconds: Double) throws -> [UInt64] {
        var out = [UInt64]()
        let end = monotonicNanos() + UInt64(seconds * 1e9)
        var next = monotonicNanos()
        while true {
            let t0 = monotonicNanos()
            if t0 >= end { break }
            let reply = try conn.call(RPC.ping)
            let t1 = monotonicNanos()
            guard !RPC.isError(reply) else { throw BenchError("ping failed: \(RPC.text(reply))") }
            out.append(t1 - t0)
            next = max(next + intervalNanos, t1)
            var ts = timespec(tv_sec: Int(next / 1_000_000_000), tv_nsec: Int(next % 1_000_000_000))
            while clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nil) == EINTR {}
        }
        return out
    }
}
