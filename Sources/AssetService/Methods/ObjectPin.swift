// object.pin / object.unpin {collection, key} → {commit}: a pinned object is never
// evicted or expired until unpinned (assetd(8), CONTROL PROTOCOL, Methods).
// Ownership rules as for other writes; with enforce_ownership only admins pin: a pin has no
// end and no bound, and quotas and the byte budget pass over pinned objects, so an owner's
// pins would be taken from the other owners' share.

import AssetStore
import ControlProtocol

extension MethodTable {
    static func objectPin(_ p: Params, _ ctx: MethodContext) throws -> MethodOutcome {
        try setPinned(p, ctx, true)
    }

    static func objectUnpin(_ p: Params, _ ctx: MethodContext) throws -> MethodOutcome {
        try setPinned(p, ctx, false)
    }

    private static func setPinned(_ p: Params, _ ctx: MethodContext, _ pinned: Bool) throws -> MethodOutcome {
        let ref = try p.ref()
        if pinned { try checkAdminIfEnforcing("object.pin", ctx) }
        return committed(
            try ctx.store.write(owner: ctx.caller.userName) { tx in
                try checkOwner(ref, tx, ctx)
                try tx.pin(ref, pinned)
            }.report)
    }
}
