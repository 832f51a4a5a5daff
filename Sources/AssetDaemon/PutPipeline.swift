// Group commit for object.put, on two threads of its own. The committer takes every queued
// put once it holds the write lock (those that arrived during the previous commit), commits
// them as one transaction, each uid's up to its share and the batch up to its budget, uids in
// turn (BatchShares; the rest are queued again first), and goes straight on to the next batch.
// The syncer fdatasyncs the WAL once for every commit made since its last sync, then hands the
// replies to the loop through a waker. A put is acknowledged only once its commit is durable. A
// batch (PutBatch) carries its commits apart from the answers: the loop notes them, then
// answers the puts, then hands the commits on for events and unlinks, once per commit.
//
// Tried and not kept: taking the puts that arrive while a batch is applied into the same
// transaction (up to 256 a commit: 22,900 puts/s against 25,600 without, five interleaved
// runs each; at most 24: no difference), and capping a batch at 16 or 24 (no difference).
//
// Why not the libuv pool: each batch then went through the loop twice (queued to a sleeping
// pool thread, its `done` run on the loop before the next batch could start), about 400 µs
// of a 1.6 ms cycle in which the write lock stood idle.

import AssetService
import AssetStore
import ControlProtocol
import EventLoop
import Foundation
import Synchronization

final class PutPipeline: @unchecked Sendable {
    // @unchecked Sendable: `waiting`, `nextTicket` and `waker` are touched only on the loop
    // thread (the threads only call `wake()`, safe anywhere, between init and stop); the rest
    // the threads share is under the two conditions.

    private struct Input {
        var ticket: UInt64
        var params: Params
        var context: MethodContext
        /// What the request counts against its connection: its uid's share of a batch counts it.
        var bytes: Int
    }

    private typealias Reply = (ticket: UInt64, result: Result<MethodOutcome, RPCError>)

    /// A committed batch waiting for the syncer; `unsynced` is the commit a sync must cover
    /// before its successes are acknowledged (nil: already durable, or nothing committed).
    private struct Committed {
        var replies: [Reply]
        var commits: [CommitReport]
        var unsynced: Int64?
    }

    /// What the syncer hands the loop: answers, and the commits they were made by.
    private struct Ready {
        var replies: [Reply] = []
        var commits: [CommitReport] = []
    }

    /// Puts waiting for the committer, and the stop request; under `incoming`.
    private final class Incoming {
        var queue: [Input] = []
        var stopping = false
    }

    /// Commits waiting for the syncer, and the committer's end; under `outgoing`.
    private final class Outgoing {
        var committed: [Committed] = []
        var committerDone = false
    }

    private let store: Store
    private let incoming = NSCondition()
    private let inputs = Incoming()
    private let outgoing = NSCondition()
    private let outputs = Outgoing()
    /// Replies ready for the loop, filled by the syncer.
    private let ready = Mutex<Ready>(Ready())
    private var waker: Waker?
    private var waiting: [UInt64: (uid: UInt32, done: (Result<MethodOutcome, RPCError>) -> Void)] = [:]
    private var nextTicket: UInt64 = 0
    /// Waiting for their uid's puts up to their ticket to be answered (`afterQueued`).
    private var barriers: [(uid: UInt32, ticket: UInt64, then: () -> Void)] = []
    /// Which uid goes first in the next batch (the committer's).
    private let turn = BatchTurn()
    private let finished = DispatchGroup()
    /// Run on the loop for each delivery: see init.
    private let noted: ([CommitReport]) -> Void
    private let answered: (_ count: Int, _ commits: [CommitReport]) -> Void

    /// Starts the two threads and the waker on `loop`. For each delivery of durable puts, on
    /// the loop: `noted` gets their commits before the puts are answered (a request pipelined
    /// behind a put sees its commit), and `answered` after, with the number answered (the
    /// daemon counts them out of its in-flight work) and the commits again, for their events
    /// and unlinks.
    init(
        store: Store, loop: Loop, noted: @escaping ([CommitReport]) -> Void,
        answered: @escaping (_ count: Int, _ commits: [CommitReport]) -> Void
    ) throws(UVError) {
        self.store = store
        self.noted = noted
        self.answered = answered
        // Referenced: a stop waits for in-flight puts, and closes it (stop()) once they are answered.
        waker = try Waker(loop: loop) { [unowned self] in deliver() }
        let bodies: [(String, @Sendable () -> Void)] = [
            ("assetd-commit", { self.commitLoop() }), ("assetd-sync", { self.syncLoop() }),
        ]
        for (name, body) in bodies {
            finished.enter()
            let thread = Thread { [finished] in
                body()
                finished.leave()
            }
            thread.name = name
            thread.start()
        }
    }

    /// Puts queued and not yet answered (loop thread).
    var waitingCount: Int { waiting.count }

    /// Queues a put (loop thread); `done` runs on the loop once it is durable, or has failed.
    func enqueue(
        _ params: Params, _ context: MethodContext, bytes: Int,
        done: @escaping (Result<MethodOutcome, RPCError>) -> Void
    ) {
        nextTicket += 1
        waiting[nextTicket] = (context.caller.uid, done)
        incoming.lock()
        inputs.queue.append(Input(ticket: nextTicket, params: params, context: context, bytes: bytes))
        incoming.signal()
        incoming.unlock()
    }

    /// Runs `then` on the loop once every put of `uid` queued so far has been answered (now if
    /// none waits): a lease's count must find in the store its uid's puts queued before it, and
    /// no other uid's (which a batch may defer, batch after batch: docs/DESIGN.md).
    func afterQueued(uid: UInt32, _ then: @escaping () -> Void) {
        guard waiting.values.contains(where: { $0.uid == uid }) else { return then() }
        barriers.append((uid, nextTicket, then))
    }

    /// Lets the threads finish what is queued, waits for them, and closes the waker (loop
    /// thread). Replies not delivered by then are dropped: the daemon calls it once every put
    /// has been answered.
    func stop() {
        incoming.lock()
        inputs.stopping = true
        incoming.signal()
        incoming.unlock()
        finished.wait()
        waker?.close()
        waker = nil
    }

    // MARK: committer

    private func commitLoop() {
        // The running batch's puts, indexed by its tags (an index, not the put: a copy of each
        // put's context in the tags cost the committer about 600 instructions a put).
        var taken: [Input] = []
        while true {
            incoming.lock()
            while inputs.queue.isEmpty && !inputs.stopping { incoming.wait() }
            let done = inputs.queue.isEmpty
            incoming.unlock()
            if done { break }
            #if DEBUG
            CommitHold.wait()
            #endif
            let batch = PutBatch.run(store, syncing: false, bytes: { taken[$0].bytes }, turn: turn) {
                () -> [PutBatch.Put<Int>] in
                incoming.lock()
                defer { incoming.unlock() }
                // Swapped, not copied: both keep their capacity, so no batch fills one from empty.
                swap(&taken, &inputs.queue)
                return taken.indices.map { PutBatch.Put(tag: $0, params: taken[$0].params, context: taken[$0].context) }
            }
            if !batch.deferred.isEmpty {
                // Past their uid's share (BatchShares): the next batch, ahead of later puts.
                incoming.lock()
                inputs.queue.insert(contentsOf: batch.deferred.map { taken[$0] }, at: 0)
                incoming.unlock()
            }
            let replies = batch.results.map { (taken[$0.0].ticket, $0.1) }
            taken.removeAll(keepingCapacity: true)
            outgoing.lock()
            outputs.committed.append(Committed(replies: replies, commits: batch.commits, unsynced: batch.unsynced))
            outgoing.signal()
            outgoing.unlock()
        }
        outgoing.lock()
        outputs.committerDone = true
        outgoing.signal()
        outgoing.unlock()
    }

    // MARK: syncer

    private func syncLoop() {
        while true {
            outgoing.lock()
            while outputs.committed.isEmpty && !outputs.committerDone { outgoing.wait() }
            let batches = outputs.committed
            outputs.committed = []
            outgoing.unlock()
            if batches.isEmpty { break }  // the committer is done and nothing is left
            var failure: RPCError?
            if let commit = batches.compactMap(\.unsynced).max() {
                do {
                    // One fdatasync covers every commit made before it.
                    try store.syncCommitted(commit)
                } catch {
                    // Committed but not durable: not acknowledged, and not run again.
                    failure = RPCError(error)
                }
            }
            var delivery = Ready()
            for batch in batches {
                // A commit that is not durable is not reported: its puts are answered with the failure.
                let lost = failure != nil && batch.unsynced != nil
                if !lost { delivery.commits += batch.commits }
                for var reply in batch.replies {
                    if let failure, lost, case .success = reply.result { reply.result = .failure(failure) }
                    delivery.replies.append(reply)
                }
            }
            ready.withLock {
                $0.replies += delivery.replies
                $0.commits += delivery.commits
            }
            waker?.wake()
        }
    }

    // MARK: loop

    private func deliver() {
        let delivery = ready.withLock { r in
            defer { r = Ready() }
            return r
        }
        guard !delivery.replies.isEmpty else { return }
        noted(delivery.commits)
        for reply in delivery.replies {
            waiting.removeValue(forKey: reply.ticket)?.done(reply.result)
        }
        answered(delivery.replies.count, delivery.commits)
        guard !barriers.isEmpty else { return }
        // Each uid's oldest put waiting: a barrier passes once its uid's is past its ticket.
        // The barriers' uids in a set, once: not a scan of them for each waiting put.
        let held = Set(barriers.lazy.map(\.uid))
        var oldest: [UInt32: UInt64] = [:]
        for (ticket, put) in waiting where held.contains(put.uid) {
            oldest[put.uid] = min(oldest[put.uid] ?? .max, ticket)
        }
        var passed: [() -> Void] = []
        barriers.removeAll { b in
            guard (oldest[b.uid] ?? .max) > b.ticket else { return false }
            passed.append(b.then)
            return true
        }
        for then in passed { then() }
    }
}
