// object.delete {collection, key} → {commit, deleted, unlinks_queued}: the object first,
// then what cascaded.

import AssetStore
import ControlProtocol

extension MethodTable {
    static func objectDelete(_ p: Params, _ ctx: MethodContext) throws -> MethodOutcome {
        let report = try ctx.store.write(owner: ctx.caller.userName, freesSpace: true) { tx in
            _ = try applyDelete(p, tx, ctx)
        }.report
        return MethodOutcome(deletionResult(report, ctx), commit: report)
    }

    static func applyDelete(_ p: Params, _ tx: WriteTransaction, _ ctx: MethodContext) throws -> JSONValue {
        let ref = try p.ref()
        try checkOwner(ref, tx, ctx)
        tx.limitCascade(to: ctx.cascadeLimit)
        try tx.delete(ref)
        return .object([:])
    }
}
