// object.put {collection, key, value, metadata?, owner?} → {commit}.

import AssetStore
import ControlProtocol

extension MethodTable {
    /// The daemon runs a put here only if it may be counted against its caller's lease quota
    /// (`countsLeases`): the others go to the group commit, through `applyPut`.
    static func objectPut(_ p: Params, _ ctx: MethodContext) throws -> MethodOutcome {
        try checkingLeaseGrowth(leaseGrowth(put: p, ctx), ctx) { refusal in
            committed(
                try ctx.store.write(owner: ctx.caller.userName) { tx in
                    _ = try applyPut(p, tx, ctx)
                    if let refusal { throw refusal }  // rolled back, its own errors told first
                }.report)
        }
    }

    /// One put inside `tx`: the same for a put alone and one in a group commit (PutBatch).
    public static func applyPut(_ p: Params, _ tx: WriteTransaction, _ ctx: MethodContext) throws -> JSONValue {
        let ref = try p.ref()
        guard let value = p.member("value") else { throw RPCError.invalidParams("value is required") }
        let owner = try p.optionalString("owner")
        if ctx.enforceOwnership && !ctx.caller.isAdmin {
            let effective = value["owner"]?.stringValue ?? owner ?? ctx.caller.userName
            guard OwnerName.same(effective, ctx.caller.userName) else {
                throw RPCError.application(.permissionDenied, "only admins may put objects owned by \(effective)")
            }
            try checkOwner(ref, tx, ctx)
        }
        // A put's value may drop derived edges whose rules delete.
        tx.limitCascade(to: ctx.cascadeLimit)
        // The caller's name explicitly: a batch's transaction serves many callers.
        try checkingFiles(tx, ctx) {
            try tx.put(ref, value: value, metadata: p.value("metadata"), owner: owner ?? ctx.caller.userName)
        }
        return .object([:])
    }
}
