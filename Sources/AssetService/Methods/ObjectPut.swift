// object.put {collection, key, value, metadata?, owner?} → {commit}.

import AssetStore
import ControlProtocol

extension MethodTable {
    static func objectPut(_ p: Params, _ ctx: MethodContext) throws -> MethodOutcome {
        committed(try ctx.store.write(owner: ctx.caller.userName) { tx in try applyPut(p, tx, ctx) }.report)
    }

    static func applyPut(_ p: Params, _ tx: WriteTransaction, _ ctx: MethodContext) throws -> JSONValue {
        let ref = try p.ref()
        guard let value = p.object["value"] else { throw RPCError.invalidParams("value is required") }
        let owner = try p.optionalString("owner")
        if ctx.enforceOwnership && !ctx.caller.isAdmin {
            let effective = value["owner"]?.stringValue ?? owner ?? ctx.caller.userName
            guard effective == ctx.caller.userName else {
                throw RPCError.application(.permissionDenied, "only admins may put objects owned by \(effective)")
            }
            try checkOwner(ref, tx, ctx)
        }
        // The caller's name explicitly: a batch's transaction serves many callers.
        try tx.put(ref, value: value, metadata: p.value("metadata"), owner: owner ?? ctx.caller.userName)
        return .object([:])
    }

    /// Group commit: several clients' puts in one transaction. The common case, where all
    /// succeed, runs them plainly; if one fails, the batch is run again with each put in a
    /// savepoint (failing alone); if the commit itself fails, each put gets its own transaction.
    public static func putBatch(_ store: Store, _ inputs: [(JSONValue, MethodContext)]) -> [Result<MethodOutcome, RPCError>] {
        var taken = false
        return putBatch(store) { () -> [(Int, JSONValue, MethodContext)] in
            defer { taken = true }
            return taken ? [] : inputs.enumerated().map { ($0.offset, $0.element.0, $0.element.1) }
        }.results.map(\.1)
    }

    /// The same, for puts taken by `take` once the batch holds the write lock (so puts that
    /// arrived while the previous commit ran join this one); the results carry their tags.
    /// Nothing taken, nothing committed. Without `syncing`, the batch's own commit is not
    /// synced: `unsynced` is that commit, and its successes may be acknowledged only once
    /// `Store.syncCommitted` has covered it (a retry's commits are synced as usual).
    public static func putBatch<Tag>(
        _ store: Store, syncing: Bool = true, take: () -> [(Tag, JSONValue, MethodContext)]
    ) -> (results: [(Tag, Result<MethodOutcome, RPCError>)], unsynced: Int64?) {
        var inputs = [(Tag, JSONValue, MethodContext)]()
        var took = false
        do {
            let done = try store.write(syncing: syncing) { tx in
                inputs = take()
                took = true
                guard !inputs.isEmpty else { throw NothingTaken() }
                for (_, params, ctx) in inputs { _ = try applyPut(Params(params), tx, ctx) }
            }
            let results = inputs.enumerated().map { i, input in
                (input.0, Result<MethodOutcome, RPCError>.success(
                    MethodOutcome(.object(["commit": .int(done.report.commit)]), commit: i == 0 ? done.report : nil)))
            }
            return (results, syncing ? nil : done.report.commit)
        } catch is NothingTaken {
            return ([], nil)
        } catch let e as StoreError where e.isUnsynced {
            // Committed but not durable: not acknowledged, and not run again.
            return (inputs.map { ($0.0, .failure(RPCError(e))) }, nil)
        } catch {
            guard took else {
                // Refused before the transaction began (store closed, busy, I/O): nothing was
                // taken, and a job that takes nothing would leave the queue to the next one,
                // which would be refused alike. The puts queued now get the refusal.
                guard case .failure(let refusal) = capture({ () throws -> Void in throw error }) else { return ([], nil) }
                return (take().map { ($0.0, .failure(refusal)) }, nil)
            }
            return (zip(inputs.map(\.0), retry(store, inputs.map { ($0.1, $0.2) })).map { ($0, $1) }, nil)
        }
    }

    private struct NothingTaken: Error {}

    /// The batch again after a failure: each put in a savepoint, or alone.
    private static func retry(_ store: Store, _ inputs: [(JSONValue, MethodContext)]) -> [Result<MethodOutcome, RPCError>] {
        guard inputs.count > 1 else { return inputs.map { call("object.put", $0.0, $0.1) } }
        let done: Committed<[Result<Void, RPCError>]>
        do {
            done = try store.write { tx in
                inputs.map { params, ctx -> Result<Void, RPCError> in
                    capture { _ = try tx.attempt { try applyPut(Params(params), tx, ctx) } }
                }
            }
        } catch let e as StoreError where e.isUnsynced {
            return inputs.map { _ in .failure(RPCError(e)) }
        } catch {
            return inputs.map { call("object.put", $0.0, $0.1) }
        }
        var reported = false
        return done.value.map { r in
            r.map { _ in
                // The commit's events go out once, with the first put that made it.
                defer { reported = true }
                return MethodOutcome(.object(["commit": .int(done.report.commit)]), commit: reported ? nil : done.report)
            }
        }
    }
}
