// The socket load generator on libuv (epoll), as redis-benchmark runs on its own event loop:
// one thread, every connection with one request in flight, replies checked by bytes.

import EventLoop
import Foundation

/// Sends `requests` over `connections` connections, one outstanding request each.
func uvLoop(
    socket: String, connections: Int, requests: [[UInt8]], deadline: UInt64?,
    check: @escaping ([UInt8], Int) throws -> Void
) throws -> LoadResult {
    let loop = try Loop()
    var streams = [PipeStream?](repeating: nil, count: connections)
    var next = 0
    var completed = 0
    var connected = 0
    var stopped = false
    var failure: (any Error)?
    var latencies = [UInt64]()
    latencies.reserveCapacity(requests.count)
    var inFlight = [Int](repeating: -1, count: connections)
    var sentAt = [UInt64](repeating: 0, count: connections)
    var partial = [[UInt8]](repeating: [], count: connections)
    var start: UInt64 = 0

    func closeAll() {
        for s in streams { s?.close() }
    }
    func issue(_ c: Int) {
        if let deadline, monotonicNanos() >= deadline {
            stopped = stopped || next < requests.count
        } else if next < requests.count {
            inFlight[c] = next
            sentAt[c] = monotonicNanos()
            streams[c]?.write(requests[next])
            next += 1
        }
        if !inFlight.contains(where: { $0 >= 0 }) { closeAll() }
    }
    func fail(_ e: any Error) {
        failure = failure ?? e
        closeAll()
    }
    func onData(_ c: Int, _ bytes: UnsafeRawBufferPointer) {
        partial[c].append(contentsOf: bytes)
        guard partial[c].last == 10 else { return }  // one request in flight: a reply ends the bytes
        let now = monotonicNanos()
        let reply = Array(partial[c].dropLast())
        partial[c].removeAll(keepingCapacity: true)
        do {
            guard !reply.contains(10) else { throw BenchError("more than one reply for one request") }
            try check(reply, inFlight[c])
        } catch {
            fail(error)
            return
        }
        latencies.append(now - sentAt[c])
        completed += 1
        inFlight[c] = -1
        issue(c)
    }
    for c in 0..<connections {
        try PipeStream.connect(loop: loop, path: socket) { result in
            switch result {
            case .success(let s):
                streams[c] = s
                do {
                    try s.startReading(
                        { onData(c, $0) },
                        onEnd: { _ in
                            if inFlight[c] >= 0 { fail(BenchError("the daemon closed a connection")) }
                        })
                } catch {
                    fail(error)
                }
                connected += 1
                if connected == connections {
                    start = monotonicNanos()
                    for i in 0..<connections { issue(i) }
                }
            case .failure(let e):
                fail(e)
            }
        }
    }
    loop.run()
    try? loop.close()
    if let failure { throw failure }
    return LoadResult(
        completed: completed, seconds: Double(monotonicNanos() - start) / 1e9, latencies: latencies,
        stoppedAtDeadline: stopped)
}
