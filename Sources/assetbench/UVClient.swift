// The socket load generator on libuv (epoll), as redis-benchmark runs on its own event loop:
// one thread, every connection with one request in flight, replies checked by bytes. A
// request is written at once (`tryWrite`; queued only if the kernel takes part of it), and a
// reply that arrives in one read is checked in libuv's read buffer: no allocation per request.
// The run's state lives in one object whose fields only the loop thread touches, so they skip
// the dynamic exclusivity checks that variables captured by the callbacks would pay.

import EventLoop
import Foundation

/// Sends `requests` over `connections` connections, one outstanding request each.
func uvLoop(
    socket: String, connections: Int, requests: [[UInt8]], deadline: UInt64?,
    check: @escaping ReplyCheck
) throws -> LoadResult {
    let run = try UVLoad(connections: connections, requests: requests, deadline: deadline, check: check)
    return try run.run(socket: socket)
}

/// One closed-loop run on a libuv loop; loop-bound.
private final class UVLoad {
    private let loop: Loop
    private let requests: [[UInt8]]
    private let deadline: UInt64?
    private let check: ReplyCheck
    @exclusivity(unchecked) private var streams: [PipeStream?]
    @exclusivity(unchecked) private var next = 0
    @exclusivity(unchecked) private var completed = 0
    @exclusivity(unchecked) private var outstanding = 0
    @exclusivity(unchecked) private var connected = 0
    @exclusivity(unchecked) private var stopped = false
    @exclusivity(unchecked) private var failure: (any Error)?
    @exclusivity(unchecked) private var latencies = [UInt64]()
    @exclusivity(unchecked) private var inFlight: [Int]
    @exclusivity(unchecked) private var sentAt: [UInt64]
    /// A reply that came in more than one read, gathered.
    @exclusivity(unchecked) private var partial: [ReplyBuffer]
    @exclusivity(unchecked) private var start: UInt64 = 0

    init(connections: Int, requests: [[UInt8]], deadline: UInt64?, check: @escaping ReplyCheck) throws {
        loop = try Loop()
        self.requests = requests
        self.deadline = deadline
        self.check = check
        streams = [PipeStream?](repeating: nil, count: connections)
        latencies.reserveCapacity(requests.count)
        inFlight = [Int](repeating: -1, count: connections)
        sentAt = [UInt64](repeating: 0, count: connections)
        partial = (0..<connections).map { _ in ReplyBuffer(capacity: 4096) }
    }

    deinit { for p in partial { p.deallocate() } }

    func run(socket: String) throws -> LoadResult {
        for c in streams.indices {
            try PipeStream.connect(loop: loop, path: socket) { [unowned self] result in
                switch result {
                case .success(let s): connected(c, s)
                case .failure(let e): fail(e)
                }
            }
        }
        loop.run()
        try? loop.close()
        streams = []
        if let failure { throw failure }
        return LoadResult(
            completed: completed, seconds: Double(monotonicNanos() - start) / 1e9, latencies: latencies,
            stoppedAtDeadline: stopped)
    }

    private func connected(_ c: Int, _ s: PipeStream) {
        streams[c] = s
        do {
            try s.startReading(
                { [unowned self] in onData(c, $0) },
                onEnd: { [unowned self] _ in
                    if inFlight[c] >= 0 { fail(BenchError("the daemon closed a connection")) }
                })
        } catch {
            fail(error)
        }
        connected += 1
        if connected == streams.count {
            start = monotonicNanos()
            for i in streams.indices { issue(i) }
        }
    }

    private func closeAll() {
        for s in streams { s?.close() }
    }

    private func issue(_ c: Int) {
        if next < requests.count {
            let now = monotonicNanos()
            if let deadline, now >= deadline {
                stopped = true
            } else if let stream = streams[c] {
                inFlight[c] = next
                sentAt[c] = now
                send(stream, requests[next])
                next += 1
                outstanding += 1
            }
        }
        if outstanding == 0 { closeAll() }
    }

    /// Writes what the kernel takes now and queues the rest (a copy) behind it.
    private func send(_ stream: PipeStream, _ request: [UInt8]) {
        request.withUnsafeBytes { bytes in
            let n = stream.tryWrite(bytes)
            guard n < bytes.count else { return }
            stream.write(Array(bytes[n...])) { [unowned self] error in
                if let error { fail(error) }
            }
        }
    }

    private func fail(_ e: any Error) {
        failure = failure ?? e
        closeAll()
    }

    private func onData(_ c: Int, _ bytes: UnsafeRawBufferPointer) {
        guard let last = bytes.last else { return }
        do {
            // One request in flight: a reply ends the bytes.
            if last == 10, partial[c].isEmpty {
                let now = monotonicNanos()
                try checkReply(UnsafeRawBufferPointer(rebasing: bytes.dropLast()), inFlight[c], check)
                received(c, at: now)
            } else {
                partial[c].append(bytes)
                guard let reply = partial[c].reply else { return }
                let now = monotonicNanos()
                try checkReply(reply, inFlight[c], check)
                partial[c].removeAll()
                received(c, at: now)
            }
        } catch {
            fail(error)
        }
    }

    private func received(_ c: Int, at now: UInt64) {
        latencies.append(now - sentAt[c])
        completed += 1
        inFlight[c] = -1
        outstanding -= 1
        issue(c)
    }
}
