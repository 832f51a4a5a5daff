// object.touch {collection, key} → {commit}: moves `accessed` (drives LRU). The time is kept in
// the engine's memory and written with the next flush of access times (Store+Access.swift);
// `commit` is the latest durable commit, not one of its own. A point read: on the daemon's
// loop like object.get.

import AssetStore
import ControlProtocol

extension MethodTable {
    static func objectTouch(_ p: Params, _ ctx: MethodContext) throws -> MethodOutcome {
        var text = [UInt8]()
        try objectTouchRead(p, ctx.store, { ctx }, &text)
        return MethodOutcome(try text.withUnsafeBufferPointer { try JSONValue.parse($0) })
    }

    /// Appends object.touch's reply text, the access recorded through `reader`.
    @Sendable static func objectTouchRead(
        _ p: Params, _ reader: any PointReads, _ context: () -> MethodContext, _ out: inout [UInt8]
    ) throws {
        let ref = try p.ref()
        let ctx = context()
        try reader.touch(ref, check: ownerCheck(ref, ctx))
        out.append(contentsOf: #"{"commit":"#.utf8)
        JSONValue.writeInt(ctx.store.durableCommit, to: &out)
        out.append(UInt8(ascii: "}"))
    }

    /// A touching read: with enforce_ownership a non-admin records accesses only of its own
    /// objects; without a check to make, no owner is read and no closure made.
    static func touching(_ ref: ObjectRef, _ ctx: MethodContext) -> Touching {
        guard let check = ownerCheck(ref, ctx) else { return .yes }
        return .checked(check)
    }

    /// The check `touching` makes, or nil when there is nothing to check: a touch then reads no
    /// owner.
    static func ownerCheck(_ ref: ObjectRef, _ ctx: MethodContext) -> AccessCheck? {
        guard ctx.enforceOwnership, !ctx.caller.isAdmin else { return nil }
        let user = ctx.caller.userName
        return { owner in
            guard !OwnerName.same(owner, user) else { return }
            throw RPCError.application(.permissionDenied, "\(ref) belongs to \(owner), not \(user)")
        }
    }

    static func applyTouch(_ p: Params, _ tx: WriteTransaction, _ ctx: MethodContext) throws -> JSONValue {
        let ref = try p.ref()
        try checkOwner(ref, tx, ctx)
        try tx.touch(ref, refreshingFiles: false)
        return .object([:])
    }
}
