// object.touch {collection, key} → {commit}: moves `accessed` (drives LRU). The time is kept in
// the engine's memory and written with the next flush of access times (Store+Access.swift);
// `commit` is the latest durable commit, not one of its own.

import AssetStore
import ControlProtocol

extension MethodTable {
    static func objectTouch(_ p: Params, _ ctx: MethodContext) throws -> MethodOutcome {
        try recordTouch(try p.ref(), ctx)
        return MethodOutcome(.object(["commit": .int(ctx.store.durableCommit)]))
    }

    /// Records an access in memory; with enforce_ownership a non-admin touches only its own.
    static func recordTouch(_ ref: ObjectRef, _ ctx: MethodContext) throws {
        try ctx.store.touch(ref) { owner in
            guard ctx.enforceOwnership, !ctx.caller.isAdmin, owner != ctx.caller.userName else { return }
            throw RPCError.application(.permissionDenied, "\(ref) belongs to \(owner), not \(ctx.caller.userName)")
        }
    }

    static func applyTouch(_ p: Params, _ tx: WriteTransaction, _ ctx: MethodContext) throws -> JSONValue {
        let ref = try p.ref()
        try checkOwner(ref, tx, ctx)
        try tx.touch(ref, refreshingFiles: false)
        return .object([:])
    }
}
