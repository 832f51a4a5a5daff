// The `poll` load generator: one thread polls every connection (redis-benchmark's model), and
// each connection reads its reply into a buffer of its own, checked where it lies. With one
// request in flight a reply ends the bytes, so nothing is copied or allocated per reply.

import Glibc

/// One connection's reply bytes, read in place; grown (doubled) only for a longer reply.
struct ReplyBuffer {
    private var storage: UnsafeMutableRawBufferPointer
    private var count = 0

    init(capacity: Int = 16 * 1024) {
        storage = .allocate(byteCount: max(capacity, 1), alignment: 16)
    }

    func deallocate() { storage.deallocate() }

    /// Where the next read goes: the free end of the buffer, at least one byte.
    mutating func room() -> UnsafeMutableRawBufferPointer {
        if count == storage.count {
            let grown = UnsafeMutableRawBufferPointer.allocate(byteCount: storage.count * 2, alignment: 16)
            grown.copyMemory(from: UnsafeRawBufferPointer(storage))
            storage.deallocate()
            storage = grown
        }
        return UnsafeMutableRawBufferPointer(rebasing: storage[count...])
    }

    /// `n` bytes were read into ``room()``.
    mutating func didRead(_ n: Int) { count += n }

    /// Appends bytes read elsewhere.
    mutating func append(_ bytes: UnsafeRawBufferPointer) {
        var from = 0
        while from < bytes.count {
            let to = room()
            let n = min(to.count, bytes.count - from)
            to.baseAddress!.copyMemory(from: bytes.baseAddress! + from, byteCount: n)
            count += n
            from += n
        }
    }

    /// The reply without its newline once the bytes end with one, else nil.
    var reply: UnsafeRawBufferPointer? {
        guard count > 0, storage[count - 1] == 10 else { return nil }
        return UnsafeRawBufferPointer(start: storage.baseAddress, count: count - 1)
    }

    var isEmpty: Bool { count == 0 }

    /// Forgets the bytes (the storage is kept).
    mutating func removeAll() { count = 0 }
}

/// Checks one whole reply: a single line (more would mean a reply to a request not sent),
/// then the workload's own check.
@inline(__always)
func checkReply(_ reply: UnsafeRawBufferPointer, _ index: Int, _ check: ReplyCheck) throws {
    if reply.count > 0, memchr(reply.baseAddress!, 10, reply.count) != nil {
        throw BenchError("more than one reply for one request")
    }
    try check(reply, index)
}

func pollLoop(
    _ conns: [LineConnection], _ requests: [[UInt8]], _ deadline: UInt64?, _ check: ReplyCheck
) throws -> LoadResult {
    var next = 0
    var completed = 0
    var stopped = false
    var latencies = [UInt64]()
    latencies.reserveCapacity(requests.count)
    var inFlight = [Int](repeating: -1, count: conns.count)
    var sentAt = [UInt64](repeating: 0, count: conns.count)
    var replies = (0..<conns.count).map { _ in ReplyBuffer() }
    defer { for r in replies { r.deallocate() } }
    var pfds = conns.map { pollfd(fd: $0.fd, events: Int16(POLLIN), revents: 0) }
    var outstanding = 0

    // Sends the next request on connection `c` unless all are sent or the deadline passed.
    func issue(_ c: Int) throws {
        guard next < requests.count else { return }
        let now = monotonicNanos()
        if let deadline, now >= deadline {
            stopped = true
            return
        }
        inFlight[c] = next
        sentAt[c] = now
        try conns[c].send(requests[next])
        next += 1
        outstanding += 1
    }

    let start = monotonicNanos()
    for c in conns.indices { try issue(c) }
    while outstanding > 0 {
        let rc = poll(&pfds, nfds_t(pfds.count), 10_000)
        if rc < 0 && errno == EINTR { continue }
        guard rc > 0 else {
            throw BenchError(rc == 0 ? "no reply for 10 s" : "poll: \(String(cString: strerror(errno)))")
        }
        for c in pfds.indices where pfds[c].revents != 0 {
            pfds[c].revents = 0
            let room = replies[c].room()
            let n = Glibc.read(pfds[c].fd, room.baseAddress, room.count)
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else {
                throw BenchError(
                    n == 0 ? "the daemon closed a connection" : "read: \(String(cString: strerror(errno)))")
            }
            replies[c].didRead(n)
            guard let reply = replies[c].reply else { continue }  // one request in flight: a reply ends the bytes
            let now = monotonicNanos()
            try checkReply(reply, inFlight[c], check)
            replies[c].removeAll()
            latencies.append(now - sentAt[c])
            completed += 1
            inFlight[c] = -1
            outstanding -= 1
            try issue(c)
        }
    }
    return LoadResult(
        completed: completed, seconds: Double(monotonicNanos() - start) / 1e9, latencies: latencies,
        stoppedAtDeadline: stopped)
}
