// The thread pool's jobs (docs/DESIGN.md, The pool takes users in turn): the daemon's own go
// to libuv at once; clients' wait, taken in turn by uid, at most `perUser` of one uid while
// another uid waits (else up to `forClients`, so a lone uid keeps the pool) and `forClients` of
// all, and go to libuv only while a thread is free, so libuv's queue never holds a client's job
// ahead of the daemon's and one thread is left for those. A newcomer waits for at most one of
// a big uid's jobs to end. A closed connection's waiting jobs are dropped unrun. Once
// stopping, the caps are lifted. Loop-bound.

import EventLoop

/// libuv's thread pool with clients' jobs taken in turn by uid; the daemon owns one.
final class PoolTurns {
    private struct Job {
        /// The connection that asked (ControlServer's session number).
        let connection: UInt64
        let work: @Sendable () -> Void
        let done: () -> Void
    }

    /// libuv's threads.
    let threads: Int
    /// Clients' jobs of one uid on the pool at once while another uid waits: half the
    /// threads, at least one.
    let perUser: Int
    /// Clients' jobs on the pool at once: all threads but one, at least one.
    let forClients: Int
    private let loop: Loop
    private var waiting = UserTurns<Job>()
    private var runningByUser: [UInt32: Int] = [:]
    /// Clients' jobs handed to libuv and not yet done.
    private(set) var clientsRunning = 0
    /// All jobs handed to libuv and not yet done, the daemon's own included.
    private var running = 0
    /// Stopping: the waiting jobs go as threads free, uncapped, so a stop is no slower.
    private var capsLifted = false

    init(loop: Loop, threads: Int = Work.threads) {
        self.loop = loop
        self.threads = threads
        perUser = max(1, threads / 2)
        forClients = max(1, threads - 1)
    }

    /// Clients' jobs waiting for their turn.
    var queued: Int { waiting.count }

    /// Runs the daemon's own `work` on the pool now, then `done` on the loop.
    func submitOwn(_ work: @escaping @Sendable () -> Void, done: @escaping () -> Void) throws(UVError) {
        try Work.submit(loop: loop, work) { [unowned self] in
            running -= 1
            done()
            if !waiting.isEmpty { dispatch() }
        }
        running += 1
    }

    /// Runs a client's `work` on the pool once it is `uid`'s turn, then `done` on the loop.
    func submit(
        uid: UInt32, connection: UInt64, _ work: @escaping @Sendable () -> Void, done: @escaping () -> Void
    ) {
        let job = Job(connection: connection, work: work, done: done)
        // Nothing waits: its turn is now if there is room (no queue to pass through; no other
        // uid waits, so `perUser` does not bind).
        if waiting.isEmpty, running < threads, capsLifted || clientsRunning < forClients {
            start(job, uid: uid)
            return
        }
        waiting.append(job, uid: uid)
        dispatch()
    }

    /// Whether a job of `connection` waits for its turn (handed to libuv, it no longer does).
    func isWaiting(connection: UInt64) -> Bool {
        !waiting.isEmpty && waiting.contains { $0.connection == connection }
    }

    /// Drops the waiting jobs of a closed connection unrun: their work and what it holds (a
    /// request's params, a long line) go now, not when their turn would have come. Their
    /// `done` still runs, so what counts them is set right, but later, after an empty job on
    /// the pool: the close that drops them may be in the middle of writing replies.
    func cancel(connection: UInt64) {
        guard !waiting.isEmpty else { return }
        for job in waiting.removeAll(matching: { $0.connection == connection }) {
            do {
                try submitOwn({}, done: job.done)
            } catch {
                preconditionFailure("uv_queue_work: \(error)")  // refused only without a work callback
            }
        }
    }

    /// Lifts the caps (the daemon is stopping) and hands the waiting jobs to libuv as threads free.
    func liftCaps() {
        capsLifted = true
        dispatch()
    }

    /// Hands waiting jobs to libuv while a thread is free and a uid may have one more: under
    /// `perUser`, or over it while no other uid waits.
    private func dispatch() {
        while running < threads, capsLifted || clientsRunning < forClients {
            let uncapped = capsLifted || waiting.users == 1
            guard let (uid, job) = waiting.next(where: { uncapped || runningByUser[$0, default: 0] < perUser })
            else { return }
            start(job, uid: uid)
        }
    }

    private func start(_ job: Job, uid: UInt32) {
        do {
            try Work.submit(loop: loop, job.work) { [unowned self] in
                running -= 1
                clientsRunning -= 1
                runningByUser[uid] = runningByUser[uid] == 1 ? nil : runningByUser[uid].map { $0 - 1 }
                job.done()
                if !waiting.isEmpty { dispatch() }
            }
        } catch {
            // uv_queue_work refuses only a request without a work callback.
            preconditionFailure("uv_queue_work: \(error)")
        }
        running += 1
        clientsRunning += 1
        runningByUser[uid, default: 0] += 1
    }
}
