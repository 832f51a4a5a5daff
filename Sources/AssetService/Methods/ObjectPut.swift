// object.put {collection, key, value, metadata?, owner?} → {commit}.

import AssetStore
import ControlProtocol

extension MethodTable {
    static func objectPut(_ p: Params, _ ctx: MethodContext) throws -> MethodOutcome {
        let put = try preparePut(p, ctx)
        return committed(try ctx.store.write(owner: ctx.caller.userName) { tx in try applyPut(put, tx, ctx) }.report)
    }

    /// One put inside `tx`: the same for a put alone and one in a group commit (PutBatch).
    public static func applyPut(_ p: Params, _ tx: WriteTransaction, _ ctx: MethodContext) throws -> JSONValue {
        try applyPut(preparePut(p, ctx), tx, ctx)
        return .object([:])
    }

    /// A put's params read and checked, and its value serialized: all that needs no
    /// transaction, which a group commit's puts do before they are queued (Session+Run).
    public static func preparePut(_ p: Params, _ ctx: MethodContext) throws -> PreparedPut {
        let ref = try p.ref()
        guard let value = p.member("value") else { throw RPCError.invalidParams("value is required") }
        let owner = try p.optionalString("owner")
        if ctx.enforceOwnership && !ctx.caller.isAdmin {
            let effective = value["owner"]?.stringValue ?? owner ?? ctx.caller.userName
            guard effective == ctx.caller.userName else {
                throw RPCError.application(.permissionDenied, "only admins may put objects owned by \(effective)")
            }
        }
        // The caller's name explicitly: a batch's transaction serves many callers.
        return try PreparedPut(ref, value: value, metadata: p.value("metadata"), owner: owner ?? ctx.caller.userName)
    }

    /// A prepared put inside `tx`: what needs the transaction (who owns the object now, the
    /// lookup and the write).
    public static func applyPut(_ put: PreparedPut, _ tx: WriteTransaction, _ ctx: MethodContext) throws {
        if ctx.enforceOwnership && !ctx.caller.isAdmin { try checkOwner(put.ref, tx, ctx) }
        try tx.put(put)
    }
}
