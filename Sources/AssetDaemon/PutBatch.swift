// One group commit of object.put, run by PutPipeline's committer: several clients' puts in
// one transaction. The common case, where all succeed, runs them plainly; if one fails, the
// batch is run again with each put in a savepoint (failing alone); if that commit fails too,
// or the first failed on a cascade bound or a full disk (which the same puts would meet
// again), each put
// gets a transaction of its own, but a uid that ran twice already, which waits for the next
// batch. Each put reads within an allowance of its own, each uid's puts within a share of the
// batch, and the batch within a budget, its uids taken in turn (BatchShares): past them puts
// wait for the next batch. A put's effect is MethodTable.applyPut, the same as a put alone; the
// retries never go back through the method table.

import AssetStore
import ControlProtocol

enum PutBatch {
    /// A queued put: its tag (the caller's), params and context. A struct, not a tuple: a
    /// tuple of them was copied whole through the runtime's tuple witnesses wherever one
    /// field was read (about 358 instructions a copy, five a put: docs/PERFORMANCE.md).
    struct Put<Tag> {
        var tag: Tag
        var params: Params
        var context: MethodContext
    }

    /// What a batch did: each put's answer with its tag, and the commits made for them, in
    /// order, whose events and unlinks the daemon handles once per commit (the answers carry
    /// only the commit number).
    struct Done<Tag> {
        var results: [(Tag, Result<MethodOutcome, RPCError>)] = []
        /// Puts past their uid's share of the batch, not run: they go in the next batch, in
        /// their order, ahead of later ones.
        var deferred: [Tag] = []
        var commits: [CommitReport] = []
        /// Without `syncing`: the batch's own commit, whose successes may be acknowledged
        /// only once `Store.syncCommitted` has covered it (a retry's commits are synced as
        /// usual). Nil when durable already, or nothing was committed.
        var unsynced: Int64?
    }

    /// The batch of the puts `take` gives once it holds the write lock (so puts that arrived
    /// while the previous commit ran join this one), each of `bytes` (its request's), its uids
    /// taken from `turn`'s, which it moves on past the uids it served. Nothing taken, nothing
    /// committed.
    static func run<Tag>(
        _ store: Store, syncing: Bool = true, bytes: (Tag) -> Int = { _ in 0 }, turn: BatchTurn = BatchTurn(),
        take: () -> [Put<Tag>]
    ) -> Done<Tag> {
        var inputs = [Put<Tag>]()
        var took = false
        var shares = BatchShares(count: 0)
        var order: [Int]?
        var deferred: [Int] = []
        do {
            let done = try store.write(syncing: syncing) { tx in
                inputs = take()
                took = true
                guard !inputs.isEmpty else { throw NothingTaken() }
                // Through the buffer: the array's subscript copied each put (its context), about
                // 125 instructions a put (docs/PERFORMANCE.md).
                let turns = inputs.withUnsafeBufferPointer { puts in
                    BatchShares.order(count: puts.count, turn: turn) { puts[$0].context.caller.principal }
                }
                order = turns.order
                shares = BatchShares(count: inputs.count, first: turns.first)
                shares.nextRun()
                deferred = []
                var repeated = RepeatedPuts(count: inputs.count)
                let sequence = order
                // Through the buffer, each put's params and context copied once: read in place
                // at each use, the context was copied at each (about 220 instructions a copy).
                try inputs.withUnsafeBufferPointer { puts in
                    for k in puts.indices {
                        let i = sequence?[k] ?? k
                        let (params, ctx) = (puts[i].params, puts[i].context)
                        guard shares.admits(params, ctx, bytes: bytes(puts[i].tag), in: tx) else {
                            deferred.append(i)
                            continue
                        }
                        if repeated.isRepeat(params) { try tx.flush() }
                        tx.beginRequest(bound: ctx.cascadeLimit)
                        // Charged whatever the put does: one that read and then threw spent too.
                        defer { shares.charge(ctx, reads: tx.requestReadCalls) }
                        _ = try MethodTable.applyPut(params, tx, ctx)
                    }
                }
            }
            let answer = committed(done.report.commit)
            var results = deferred.isEmpty ? inputs.map { ($0.tag, answer) } : []
            if !deferred.isEmpty {
                var later = Set(deferred)
                for (i, input) in inputs.enumerated() where later.remove(i) == nil {
                    results.append((input.tag, answer))
                }
                pass(turn, shares, deferred.map { inputs[$0].context.caller.principal })
            }
            return Done(
                results: results, deferred: deferred.map { inputs[$0].tag }, commits: [done.report],
                unsynced: syncing ? nil : done.report.commit)
        } catch is NothingTaken {
            return Done()
        } catch let e as StoreError where e.isUnsynced {
            // Committed but not durable: not acknowledged, and not run again. The puts that
            // did not run go in the next batch (which the failed sync will refuse).
            let later = Set(deferred)
            var done = Done<Tag>(deferred: deferred.map { inputs[$0].tag })
            for (i, input) in inputs.enumerated() where !later.contains(i) {
                done.results.append((input.tag, .failure(RPCError(e))))
            }
            return done
        } catch {
            guard took else {
                // Refused before the transaction began (store closed, busy, I/O): nothing was
                // taken, and a job that takes nothing would leave the queue to the next one,
                // which would be refused alike. The puts queued now get the refusal.
                guard case .failure(let refusal) = MethodTable.capture({ () throws -> Void in throw error }) else {
                    return Done()
                }
                return Done(results: take().map { ($0.tag, .failure(refusal)) })
            }
            // A cascade bound's refusal comes again in a retry of the same puts (the flush
            // bounds them all by the smallest): each goes alone. The allowance's (files read
            // again) is one put's, thrown inside it with an allowance of its own: only that
            // put fails in the retry.
            // What each uid's puts spent in the run that failed still counts (BatchShares).
            let again = inputs.map { ($0.params, $0.context, bytes($0.tag)) }
            // So does a full disk's growth check, made at commit for the whole batch: one
            // client's large put would fail the retry too, and defer the others' small puts.
            let code = (error as? StoreError)?.code
            let bounded = code == .cascadeLimit || code == .storageFull
            let retried =
                bounded
                ? alone(store, again, order, &shares, last: false) : retry(store, again, order, &shares)
            var done = Done<Tag>(commits: retried.commits)
            for (input, result) in zip(inputs, retried.results) {
                if let result { done.results.append((input.tag, result)) }
            }
            var later: [UInt32] = []
            for k in inputs.indices {
                let i = order?[k] ?? k
                guard retried.results[i] == nil else { continue }
                done.deferred.append(inputs[i].tag)
                later.append(inputs[i].context.caller.principal)
            }
            pass(turn, shares, later)
            return done
        }
    }

    /// Moves `turn` on after a batch that deferred the puts of `deferred` (their uids, in the
    /// order they ran in): the first of them not served (its oldest put did not run, though
    /// its lighter later ones may have) goes first next; if each was, the uid after this
    /// batch's first.
    private static func pass(_ turn: BatchTurn, _ shares: BatchShares, _ deferred: [UInt32]) {
        guard !deferred.isEmpty else { return }
        turn.next = deferred.first { !shares.served($0) } ?? shares.first &+ 1
    }

    private struct NothingTaken: Error {}

    /// Two puts of one object in a batch: the rules run (a flush) before the second, as they
    /// would between two commits. Otherwise the second value replaced the first before any
    /// edge was derived, and a file only the first named was never registered, so never
    /// unlinked: a batch must do what its puts one after the other would.
    private struct RepeatedPuts {
        private var seen: Set<ObjectRef>?

        init(count: Int) { seen = count > 1 ? Set(minimumCapacity: count) : nil }

        /// Whether an earlier put of the batch named the same object (a canonically equal
        /// name counts too: one flush more changes nothing).
        mutating func isRepeat(_ params: Params) -> Bool {
            guard seen != nil, let ref = try? params.ref() else { return false }
            return !seen!.insert(ref).inserted
        }
    }

    /// `{commit}`, for every put a commit made.
    private static func committed(_ commit: Int64) -> Result<MethodOutcome, RPCError> {
        .success(MethodOutcome(.object(["commit": .int(commit)])))
    }

    /// Each put's answer in a retry, nil for one deferred to the next batch; its commits.
    private struct Retried {
        var results: [Result<MethodOutcome, RPCError>?] = []
        var commits: [CommitReport] = []
    }

    private typealias Again = (params: Params, ctx: MethodContext, bytes: Int)

    /// The batch again after a failure, in `order`: each put in a savepoint, or alone.
    private static func retry(
        _ store: Store, _ inputs: [Again], _ order: [Int]?, _ shares: inout BatchShares
    ) -> Retried {
        guard inputs.count > 1 else { return alone(store, inputs, order, &shares, last: false) }
        let done: Committed<[Result<Void, RPCError>?]>
        var tried = shares
        var ran = [Bool]()
        do {
            done = try store.write { tx in
                tried = shares
                tried.nextRun()
                ran = Array(repeating: false, count: inputs.count)
                var results = [Result<Void, RPCError>?](repeating: nil, count: inputs.count)
                var repeated = RepeatedPuts(count: inputs.count)
                for k in inputs.indices {
                    let i = order?[k] ?? k
                    let (params, ctx, bytes) = inputs[i]
                    guard tried.admits(params, ctx, bytes: bytes, in: tx) else { continue }
                    ran[i] = true
                    results[i] = MethodTable.capture {
                        if repeated.isRepeat(params) { try tx.flush() }
                        tx.beginRequest(bound: ctx.cascadeLimit)
                        // `attempt` gives back what a put that throws spent: charged before.
                        var spent = 0
                        defer { tried.charge(ctx, reads: spent) }
                        _ = try tx.attempt {
                            defer { spent = tx.requestReadCalls }
                            return try MethodTable.applyPut(params, tx, ctx)
                        }
                    }
                }
                return results
            }
        } catch let e as StoreError where e.isUnsynced {
            // Puts that did not run were never made: the next batch, not this failure.
            shares = tried
            return Retried(results: ran.map { $0 ? .failure(RPCError(e)) : nil })
        } catch {
            // Every uid that ran has run twice now (the batch, this retry): it waits for the
            // next batch rather than run a third time alone.
            shares = tried
            return alone(store, inputs, order, &shares, last: true)
        }
        shares = tried
        let answer = committed(done.report.commit)
        let results = done.value.map { r in r.map { $0.flatMap { answer } } }
        // A commit whose every put failed changed nothing: no events.
        let anyPut = done.value.contains { if case .success? = $0 { true } else { false } }
        return Retried(results: results, commits: anyPut ? [done.report] : [])
    }

    /// Each put in a transaction of its own, in `order`, within its uid's share; `last`,
    /// after a failed retry: only the uids that have not run yet (and the first in turn).
    private static func alone(
        _ store: Store, _ inputs: [Again], _ order: [Int]?, _ shares: inout BatchShares, last: Bool
    ) -> Retried {
        var done = Retried(results: Array(repeating: nil, count: inputs.count))
        shares.nextRun(last: last)
        for k in inputs.indices {
            let i = order?[k] ?? k
            let (params, ctx, bytes) = inputs[i]
            // Each alone: nothing read again before in its transaction.
            guard shares.admits(params, ctx, bytes: bytes, in: nil) else { continue }
            var reads = 0
            let result = MethodTable.capture {
                try store.write(owner: ctx.caller.userName) { tx in
                    defer { reads = tx.requestReadCalls }
                    _ = try MethodTable.applyPut(params, tx, ctx)
                }.report
            }
            shares.charge(ctx, reads: reads)
            done.results[i] = result.map { MethodOutcome(.object(["commit": .int($0.commit)])) }
            if case .success(let report) = result { done.commits.append(report) }
        }
        return done
    }
}
