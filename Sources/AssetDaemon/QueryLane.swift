// Index queries and aggregates run on threads of their own, never on libuv's pool: a client's
// clause may run until the query time limit, and a few such clauses must not keep writes,
// touches, leases, stats or sweeps waiting (assetd(8), CONTROL PROTOCOL). Waiting queries are
// taken in turn by user, so that one user's many connections cannot keep another's out.

import EventLoop
import Foundation
import Synchronization

final class QueryLane: @unchecked Sendable {
    // @unchecked Sendable: `completions`, `nextTicket` and `waker` are set only on the loop
    // thread (the threads only call wake(), and stop() waits for them before closing it); the
    // rest is under `lock` or a Mutex.
    private struct Job {
        let ticket: UInt64
        let connection: UInt64
        let work: @Sendable () -> Void
    }

    /// Jobs waiting by uid, and the uids in the order they get their next turn; under `lock`.
    private final class Waiting {
        var byUser: [UInt32: [Job]] = [:]
        var turns: [UInt32] = []
        var running = 0
        var stopping = false
        var count: Int { byUser.values.reduce(0) { $0 + $1.count } }
    }

    let threads: Int
    private let lock = NSCondition()
    private let waiting = Waiting()
    /// Tickets whose work ended, for the loop.
    private let finished = Mutex<[UInt64]>([])
    private var waker: Waker?
    /// Completions by ticket; loop-bound.
    private var completions: [UInt64: () -> Void] = [:]
    private var nextTicket: UInt64 = 0
    private let ended = DispatchGroup()

    init(loop: Loop, threads: Int) throws(UVError) {
        self.threads = threads
        waker = try Waker(loop: loop) { [unowned self] in deliver() }
        for i in 0..<threads {
            ended.enter()
            let thread = Thread { [self] in
                serve()
                ended.leave()
            }
            thread.name = "assetd-query-\(i)"
            thread.start()
        }
    }

    /// Queues `work` for a lane thread (loop thread); `done` runs on the loop after it.
    func submit(uid: UInt32, connection: UInt64, _ work: @escaping @Sendable () -> Void, done: @escaping () -> Void) {
        nextTicket += 1
        completions[nextTicket] = done
        lock.lock()
        if waiting.byUser[uid, default: []].isEmpty { waiting.turns.append(uid) }
        waiting.byUser[uid, default: []].append(Job(ticket: nextTicket, connection: connection, work: work))
        lock.signal()
        lock.unlock()
    }

    /// Drops the jobs of `connection` that have not started (it closed): their completions
    /// run on the next delivery, with no work done.
    func cancel(connection: UInt64) {
        var dropped: [UInt64] = []
        lock.lock()
        for (uid, jobs) in waiting.byUser {
            let keep = jobs.filter { $0.connection != connection }
            guard keep.count != jobs.count else { continue }
            dropped += jobs.filter { $0.connection == connection }.map(\.ticket)
            waiting.byUser[uid] = keep.isEmpty ? nil : keep
            if keep.isEmpty { waiting.turns.removeAll { $0 == uid } }
        }
        lock.unlock()
        guard !dropped.isEmpty else { return }
        finished.withLock { $0 += dropped }
        waker?.wake()
    }

    /// Queries running and waiting, for stats.
    var load: (running: Int, queued: Int) {
        lock.lock()
        defer { lock.unlock() }
        return (waiting.running, waiting.count)
    }

    /// Lets the threads end once nothing waits, and waits for them (loop thread).
    func stop() {
        lock.lock()
        waiting.stopping = true
        lock.broadcast()
        lock.unlock()
        ended.wait()
        deliver()
        waker?.close()
        waker = nil
    }

    private func serve() {
        while true {
            lock.lock()
            while waiting.turns.isEmpty && !waiting.stopping { lock.wait() }
            guard !waiting.turns.isEmpty else {
                lock.unlock()
                return
            }
            let uid = waiting.turns.removeFirst()
            var jobs = waiting.byUser[uid] ?? []
            let job = jobs.removeFirst()
            waiting.byUser[uid] = jobs.isEmpty ? nil : jobs
            if !jobs.isEmpty { waiting.turns.append(uid) }  // its next job waits for the others' turns
            waiting.running += 1
            lock.unlock()
            job.work()
            lock.lock()
            waiting.running -= 1
            lock.unlock()
            finished.withLock { $0.append(job.ticket) }
            waker?.wake()
        }
    }

    private func deliver() {
        let tickets = finished.withLock { f in
            defer { f = [] }
            return f
        }
        for t in tickets { completions.removeValue(forKey: t)?() }
    }
}
