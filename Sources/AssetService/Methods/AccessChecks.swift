// The checks method bodies make of their caller: ownership of what they write, and the
// runs that are for admins only.

import AssetStore
import ControlProtocol

extension MethodTable {
    /// With enforce_ownership, a non-admin may write only its own objects.
    static func checkOwner(_ ref: ObjectRef, _ tx: WriteTransaction, _ ctx: MethodContext) throws {
        // The owner column alone: a get would parse the value and read every file it holds.
        guard ctx.enforceOwnership, !ctx.caller.isAdmin, let owner = try tx.owner(ref) else { return }
        guard OwnerName.same(owner, ctx.caller.userName) else {
            throw RPCError.application(.permissionDenied, "\(ref) belongs to \(owner), not \(ctx.caller.userName)")
        }
    }

    /// Runs `body` (a put or an edge.add) checking, with enforce_ownership for a non-admin,
    /// each existing file it names: the daemon may unlink it later for this caller's rules,
    /// so the caller must be able to unlink it itself (UnlinkAccess).
    static func checkingFiles<T>(_ tx: WriteTransaction, _ ctx: MethodContext, _ body: () throws -> T) throws -> T {
        guard ctx.enforceOwnership, !ctx.caller.isAdmin else { return try body() }
        let caller = ctx.caller
        tx.fileReferenceCheck = FileReferenceCheck(uid: caller.uid, owner: caller.userName) {
            UnlinkAccess.refusal($0, uid: caller.uid, gids: caller.gids)
        }
        defer { tx.fileReferenceCheck = nil }
        return try body()
    }

    /// Real runs that delete other users' objects, or touch the whole database, are for admins.
    static func requireAdmin(_ what: String, _ ctx: MethodContext) throws {
        guard ctx.caller.isAdmin else { throw RPCError.application(.permissionDenied, "\(what) is for admins only") }
    }

    /// With enforce_ownership, only admins change what affects every object.
    static func checkAdminIfEnforcing(_ what: String, _ ctx: MethodContext) throws {
        if ctx.enforceOwnership && !ctx.caller.isAdmin {
            throw RPCError.application(.permissionDenied, "\(what) is for admins while ownership is enforced")
        }
    }
}
