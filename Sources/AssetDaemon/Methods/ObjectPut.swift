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
        guard inputs.count > 1 else { return inputs.map { call("object.put", $0.0, $0.1) } }
        if let done = try? store.write({ tx in
            for (params, ctx) in inputs { _ = try applyPut(Params(params), tx, ctx) }
        }) {
            return inputs.indices.map { i in
                .success(MethodOutcome(.object(["commit": .int(done.report.commit)]), commit: i == 0 ? done.report : nil))
            }
        }
        let done: Committed<[Result<Void, RPCError>]>
        do {
            done = try store.write { tx in
                inputs.map { params, ctx -> Result<Void, RPCError> in
                    capture { _ = try tx.attempt { try applyPut(Params(params), tx, ctx) } }
                }
            }
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
