// Index queries and aggregates run on threads of their own, never on libuv's pool: a client's
// clause may run until the query time limit, and a few such clauses must not keep writes,
// touches, leases, stats or sweeps waiting (assetd(8), CONTROL PROTOCOL). Waiting queries are
// taken in turn by user, so that one user's many connections cannot keep another's out, and
// a uid that is not an admin runs at most half the threads (at least one), even alone: a
// query may hold its thread until the time limit and cannot be stopped for a newcomer, so a
// uid let take more while alone kept the next users' trivial queries waiting that long
// (docs/DESIGN.md). Admins are trusted, as with leases: no cap. Once stopping, none at all.

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
        /// The caller is an admin: no cap on its uid's threads.
        let admin: Bool
        let work: @Sendable () -> Void
    }

    /// Jobs waiting, taken in turn by uid; under `lock`.
    private final class Waiting {
        var jobs = UserTurns<Job>()
        var running = 0
        var runningByUser: [UInt32: Int] = [:]
        var stopping = false
    }

    let threads: Int
    /// The most queries of one uid (not an admin's) running at once: half the threads, at
    /// least one.
    let perUser: Int
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
        perUser = max(1, threads / 2)
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
    func submit(
        uid: UInt32, admin: Bool, connection: UInt64, _ work: @escaping @Sendable () -> Void,
        done: @escaping () -> Void
    ) {
        nextTicket += 1
        completions[nextTicket] = done
        lock.lock()
        waiting.jobs.append(Job(ticket: nextTicket, connection: connection, admin: admin, work: work), uid: uid)
        lock.signal()
        lock.unlock()
    }

    /// Drops the jobs of `connection` that have not started (it closed): their completions
    /// run on the next delivery, with no work done.
    func cancel(connection: UInt64) {
        lock.lock()
        let dropped = waiting.jobs.removeAll { $0.connection == connection }.map(\.ticket)
        lock.unlock()
        guard !dropped.isEmpty else { return }
        finished.withLock { $0 += dropped }
        waker?.wake()
    }

    /// Queries running and waiting, for stats.
    var load: (running: Int, queued: Int) {
        lock.lock()
        defer { lock.unlock() }
        return (waiting.running, waiting.jobs.count)
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
            var taken: (uid: UInt32, job: Job)?
            while true {
                let w = waiting
                let cap = perUser
                taken = w.jobs.next(whereFirst: { uid, job in
                    w.stopping || job.admin || w.runningByUser[uid, default: 0] < cap
                })
                if taken != nil || (w.jobs.isEmpty && w.stopping) { break }
                lock.wait()  // nothing waits, or only uids at their cap: a job's end wakes it
            }
            guard let (uid, job) = taken else {
                lock.unlock()
                return
            }
            waiting.running += 1
            waiting.runningByUser[uid, default: 0] += 1
            lock.unlock()
            job.work()
            lock.lock()
            waiting.running -= 1
            let left = waiting.runningByUser[uid, default: 1] - 1
            waiting.runningByUser[uid] = left > 0 ? left : nil
            lock.broadcast()  // that uid's next job may go now
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
