// One group commit of object.put, run by PutPipeline's committer: several clients' puts in
// one transaction. The common case, where all succeed, runs them plainly; if one fails, the
// batch is run again with each put in a savepoint (failing alone); if that commit fails too,
// or the first failed on a cascade bound (which the same puts would meet again), each put
// gets a transaction of its own. Each put reads within an allowance of its own. A put's effect is MethodTable.applyPut, the same
// as a put alone; the retries never go back through the method table.

import AssetStore
import ControlProtocol

enum PutBatch {
    /// What a batch did: each put's answer with its tag, and the commits made for them, in
    /// order, whose events and unlinks the daemon handles once per commit (the answers carry
    /// only the commit number).
    struct Done<Tag> {
        var results: [(Tag, Result<MethodOutcome, RPCError>)] = []
        var commits: [CommitReport] = []
        /// Without `syncing`: the batch's own commit, whose successes may be acknowledged
        /// only once `Store.syncCommitted` has covered it (a retry's commits are synced as
        /// usual). Nil when durable already, or nothing was committed.
        var unsynced: Int64?
    }

    /// The batch of `inputs`, synced; the answers in their order.
    static func run(_ store: Store, _ inputs: [(JSONValue, MethodContext)]) -> Done<Int> {
        var taken = false
        return run(store) { () -> [(Int, Params, MethodContext)] in
            defer { taken = true }
            return taken ? [] : inputs.enumerated().map { ($0.offset, Params($0.element.0), $0.element.1) }
        }
    }

    /// The batch of the puts `take` gives once it holds the write lock (so puts that arrived
    /// while the previous commit ran join this one). Nothing taken, nothing committed.
    static func run<Tag>(
        _ store: Store, syncing: Bool = true, take: () -> [(Tag, Params, MethodContext)]
    ) -> Done<Tag> {
        var inputs = [(Tag, Params, MethodContext)]()
        var took = false
        do {
            let done = try store.write(syncing: syncing) { tx in
                inputs = take()
                took = true
                guard !inputs.isEmpty else { throw NothingTaken() }
                var repeated = RepeatedPuts(count: inputs.count)
                for (_, params, ctx) in inputs {
                    if repeated.isRepeat(params) { try tx.flush() }
                    tx.beginRequest(bound: ctx.cascadeLimit)
                    _ = try MethodTable.applyPut(params, tx, ctx)
                }
            }
            let answer = committed(done.report.commit)
            return Done(
                results: inputs.map { ($0.0, answer) }, commits: [done.report],
                unsynced: syncing ? nil : done.report.commit)
        } catch is NothingTaken {
            return Done()
        } catch let e as StoreError where e.isUnsynced {
            // Committed but not durable: not acknowledged, and not run again.
            return Done(results: inputs.map { ($0.0, .failure(RPCError(e))) })
        } catch {
            guard took else {
                // Refused before the transaction began (store closed, busy, I/O): nothing was
                // taken, and a job that takes nothing would leave the queue to the next one,
                // which would be refused alike. The puts queued now get the refusal.
                guard case .failure(let refusal) = MethodTable.capture({ () throws -> Void in throw error }) else {
                    return Done()
                }
                return Done(results: take().map { ($0.0, .failure(refusal)) })
            }
            // A cascade bound's refusal comes again in a retry of the same puts (the flush
            // bounds them all by the smallest): each goes alone. The allowance's (files read
            // again) is one put's, thrown inside it with an allowance of its own: only that
            // put fails in the retry.
            let again = inputs.map { ($0.1, $0.2) }
            let bounded = (error as? StoreError)?.code == .cascadeLimit
            let retried = bounded ? alone(store, again) : retry(store, again)
            return Done(results: zip(inputs.map(\.0), retried.results).map { ($0, $1.1) }, commits: retried.commits)
        }
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

    /// The batch again after a failure: each put in a savepoint, or alone.
    private static func retry(_ store: Store, _ inputs: [(Params, MethodContext)]) -> Done<Void> {
        guard inputs.count > 1 else { return alone(store, inputs) }
        let done: Committed<[Result<Void, RPCError>]>
        do {
            done = try store.write { tx in
                var repeated = RepeatedPuts(count: inputs.count)
                return inputs.map { params, ctx -> Result<Void, RPCError> in
                    MethodTable.capture {
                        if repeated.isRepeat(params) { try tx.flush() }
                        tx.beginRequest(bound: ctx.cascadeLimit)
                        _ = try tx.attempt { try MethodTable.applyPut(params, tx, ctx) }
                    }
                }
            }
        } catch let e as StoreError where e.isUnsynced {
            return Done(results: inputs.map { _ in ((), .failure(RPCError(e))) })
        } catch {
            return alone(store, inputs)
        }
        let answer = committed(done.report.commit)
        let results = done.value.map { r in ((), r.flatMap { answer }) }
        // A commit whose every put failed changed nothing: no events.
        let anyPut = done.value.contains { if case .success = $0 { true } else { false } }
        return Done(results: results, commits: anyPut ? [done.report] : [])
    }

    /// Each put in a transaction of its own.
    private static func alone(_ store: Store, _ inputs: [(Params, MethodContext)]) -> Done<Void> {
        var done = Done<Void>()
        for (params, ctx) in inputs {
            let result = MethodTable.capture {
                try store.write(owner: ctx.caller.userName) { tx in
                    _ = try MethodTable.applyPut(params, tx, ctx)
                }.report
            }
            done.results.append(((), result.map { MethodOutcome(.object(["commit": .int($0.commit)])) }))
            if case .success(let report) = result { done.commits.append(report) }
        }
        return done
    }
}
