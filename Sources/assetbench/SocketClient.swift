// The load generator of the socket workloads: plain AF_UNIX connections speaking assetd's
// line protocol, one request at a time per connection (pipeline 1, as redis-benchmark's
// default). Three drivers: `uv` (UVClient.swift) runs every connection from one thread on
// libuv's epoll loop, the way redis-benchmark runs its clients on its own; `poll`
// (PollClient.swift) does the same with poll(2); `threads` gives each connection its own
// thread with blocking calls. Requests are built before the clock starts; replies are checked
// with a few byte comparisons (assetd writes compact JSON with sorted keys).

import Foundation
import Glibc
import Synchronization

/// One blocking connection to a Unix socket.
final class LineConnection {
    let fd: Int32
    private var buffer = [UInt8](repeating: 0, count: 64 * 1024)
    /// Bytes of `buffer` read but not yet returned as a line.
    private var pending = [UInt8]()

    init(path: String) throws {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else {
            throw BenchError("socket path too long: \(path)")
        }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: bytes)
            raw[bytes.count] = 0
        }
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw BenchError("socket: \(String(cString: strerror(errno)))") }
        let rc = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard rc == 0 else {
            let e = errno
            Glibc.close(fd)
            throw BenchError("connect \(path): \(String(cString: strerror(e)))")
        }
        self.fd = fd
    }

    deinit { Glibc.close(fd) }

    /// Writes all of `bytes`.
    func send(_ bytes: [UInt8]) throws {
        try bytes.withUnsafeBytes { raw in
            var off = 0
            while off < raw.count {
                let n = Glibc.write(fd, raw.baseAddress! + off, raw.count - off)
                if n < 0 && errno == EINTR { continue }
                guard n > 0 else { throw BenchError("write: \(String(cString: strerror(errno)))") }
                off += n
            }
        }
    }

    /// Reads the next line (without its newline).
    func receiveLine() throws -> [UInt8] {
        while true {
            if let nl = pending.firstIndex(of: 10) {
                let line = Array(pending[..<nl])
                pending.removeFirst(nl + 1)
                return line
            }
            let n = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else {
                throw BenchError(
                    n == 0 ? "the daemon closed the connection" : "read: \(String(cString: strerror(errno)))")
            }
            pending.append(contentsOf: buffer[..<n])
        }
    }

    /// Sends a request and returns its reply line.
    func call(_ request: [UInt8]) throws -> [UInt8] {
        try send(request)
        return try receiveLine()
    }
}

/// Request lines for the socket workloads.
enum RPC {
    static func line(_ method: String, _ params: String) -> [UInt8] {
        Array("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"\(method)\",\"params\":\(params)}\n".utf8)
    }

    static func get(_ collection: String, _ key: String) -> [UInt8] {
        line("object.get", "{\"collection\":\"\(collection)\",\"key\":\"\(key)\"}")
    }

    /// object.get that also records an access (moves `accessed`, as a cache hit would).
    static func getTouching(_ collection: String, _ key: String) -> [UInt8] {
        line("object.get", "{\"collection\":\"\(collection)\",\"key\":\"\(key)\",\"touch\":true}")
    }

    static func touch(_ collection: String, _ key: String) -> [UInt8] {
        line("object.touch", "{\"collection\":\"\(collection)\",\"key\":\"\(key)\"}")
    }

    static func put(_ collection: String, _ key: String, owner: String, n: Int) -> [UInt8] {
        line(
            "object.put",
            "{\"collection\":\"\(collection)\",\"key\":\"\(key)\",\"value\":{\"owner\":\"\(owner)\",\"n\":\(n)}}")
    }

    static let ping = line("ping", "{}")

    static func aggregate(function: String, clause: String) -> [UInt8] {
        line("index.aggregate", "{\"function\":\"\(function)\",\"where\":\"\(clause)\"}")
    }

    /// The commit number in an object.put reply (`{"commit":N}`), nil if there is none.
    static func commitNumber(_ reply: UnsafeRawBufferPointer) -> Int64? {
        let key: StaticString = "\"commit\":"
        let k = key.utf8CodeUnitCount
        guard reply.count > k else { return nil }
        for at in 0...(reply.count - k) where memcmp(reply.baseAddress! + at, key.utf8Start, k) == 0 {
            var i = at + k
            guard i < reply.count, reply[i] >= 48, reply[i] <= 57 else { return nil }
            var n: Int64 = 0
            while i < reply.count, reply[i] >= 48, reply[i] <= 57 {
                n = n * 10 + Int64(reply[i] - 48)
                i += 1
            }
            return n
        }
        return nil
    }

    /// True for an error reply (keys are sorted, so `error` comes first).
    static func isError(_ reply: UnsafeRawBufferPointer) -> Bool {
        let prefix: StaticString = "{\"error\":"
        let k = prefix.utf8CodeUnitCount
        return reply.count >= k && memcmp(reply.baseAddress!, prefix.utf8Start, k) == 0
    }

    /// True for a `null` result (object.get of a missing key).
    static func isNullResult(_ reply: UnsafeRawBufferPointer) -> Bool {
        let suffix: StaticString = "\"result\":null}"
        let k = suffix.utf8CodeUnitCount
        return reply.count >= k && memcmp(reply.baseAddress! + (reply.count - k), suffix.utf8Start, k) == 0
    }

    /// The reply as text, for messages.
    static func text(_ reply: UnsafeRawBufferPointer) -> String {
        String(decoding: reply.prefix(300), as: UTF8.self)
    }

    static func isError(_ reply: [UInt8]) -> Bool { reply.withUnsafeBytes { isError($0) } }
    static func isNullResult(_ reply: [UInt8]) -> Bool { reply.withUnsafeBytes { isNullResult($0) } }
    static func text(_ reply: [UInt8]) -> String { reply.withUnsafeBytes { text($0) } }
}

/// Sees each reply (without its newline, valid only during the call) and its request's index;
/// throws if the reply is wrong.
typealias ReplyCheck = @Sendable (UnsafeRawBufferPointer, Int) throws -> Void

/// How the requests of a closed-loop run are issued.
enum ClientDriver: String {
    /// One thread on libuv's event loop (epoll), like redis-benchmark's own loop.
    case uv
    /// One thread polls every connection with poll(2).
    case poll
    /// One thread per connection, blocking.
    case threads

    /// How it runs, for the report.
    var summary: String {
        switch self {
        case .uv: "one thread on libuv's epoll loop, like redis-benchmark"
        case .poll: "one thread polls all"
        case .threads: "a thread per connection"
        }
    }
}

/// What a closed-loop run did.
struct LoadResult {
    /// Requests answered.
    var completed: Int
    /// From the first request sent to the last reply read.
    var seconds: Double
    /// Every request's round trip, nanoseconds, unordered.
    var latencies: [UInt64]
    /// True if the run stopped at its deadline before sending every request.
    var stoppedAtDeadline: Bool

    var opsPerSecond: Double { Double(completed) / seconds }

    /// The `p` quantile (0…1) of the round trips, in milliseconds.
    func percentile(_ p: Double) -> Double { LoadResult.percentile(latencies, p) }

    static func percentile(_ samples: [UInt64], _ p: Double) -> Double {
        guard !samples.isEmpty else { return .nan }
        let s = samples.sorted()
        return Double(s[min(s.count - 1, Int((Double(s.count) * p).rounded(.down)))]) / 1e6
    }
}

/// Sends `requests` over `connections` connections to `socket`, one outstanding request per
/// connection, until all are answered or (with a deadline) no new request is sent after
/// `deadline` (monotonic nanoseconds). `check` sees each reply and its request's index and
/// throws if the reply is wrong.
func closedLoop(
    socket: String, connections: Int, requests: [[UInt8]], driver: ClientDriver, deadline: UInt64? = nil,
    check: @escaping ReplyCheck
) throws -> LoadResult {
    if driver == .uv {
        return try uvLoop(
            socket: socket, connections: connections, requests: requests, deadline: deadline, check: check)
    }
    let conns = try (0..<connections).map { _ in try LineConnection(path: socket) }
    switch driver {
    case .uv: preconditionFailure("handled above")
    case .poll: return try pollLoop(conns, requests, deadline, check)
    case .threads: return try threadLoop(conns, requests, deadline, check)
    }
}

private func threadLoop(
    _ conns: [LineConnection], _ requests: [[UInt8]], _ deadline: UInt64?,
    _ check: @escaping ReplyCheck
) throws -> LoadResult {
    let next = Atomic<Int>(0)
    let stopped = Atomic<Bool>(false)
    let failure = Mutex<String?>(nil)
    let perThread = Mutex<[(latencies: [UInt64], end: UInt64)]>([])
    let connsBox = UnsafeTransfer(conns)
    let requestsBox = UnsafeTransfer(requests)
    let start = monotonicNanos()
    let threads = (0..<conns.count).map { c in
        Thread {
            let conn = connsBox.value[c]
            let requests = requestsBox.value
            var mine = [UInt64]()
            mine.reserveCapacity(requests.count / connsBox.value.count + 16)
            do {
                while true {
                    if let deadline, monotonicNanos() >= deadline {
                        if next.load(ordering: .relaxed) < requests.count { stopped.store(true, ordering: .relaxed) }
                        break
                    }
                    let i = next.wrappingAdd(1, ordering: .relaxed).oldValue
                    guard i < requests.count else { break }
                    let t0 = monotonicNanos()
                    let reply = try conn.call(requests[i])
                    let t1 = monotonicNanos()
                    try reply.withUnsafeBytes { try check($0, i) }
                    mine.append(t1 - t0)
                }
            } catch {
                failure.withLock { $0 = $0 ?? "\(error)" }
            }
            let end = monotonicNanos()
            perThread.withLock { $0.append((mine, end)) }
        }
    }
    for t in threads { t.start() }
    while perThread.withLock({ $0.count }) < threads.count { usleep(1000) }
    if let f = failure.withLock({ $0 }) { throw BenchError(f) }
    let (latencies, end) = perThread.withLock { ($0.flatMap(\.latencies), $0.map(\.end).max() ?? start) }
    let seconds = Double(end - start) / 1e9
    return LoadResult(
        completed: latencies.count, seconds: seconds, latencies: latencies,
        stoppedAtDeadline: stopped.load(ordering: .relaxed))
}

/// Hands a non-Sendable value to threads that only read it (or, for connections, each use its own).
struct UnsafeTransfer<T>: @unchecked Sendable {
    let value: T
    init(_ value: T) { self.value = value }
}
