// lease.release {lease} → {released}: ends a lease early (its holder's connection or an
// admin); its files' deferred unlinks become due again. With enforce_ownership a non-admin is
// answered for a lease it cannot list (another uid's) as for no lease at all: a refusal would
// tell it which ids other users' clients hold.

import AssetStore
import ControlProtocol

extension MethodTable {
    static func leaseRelease(_ p: Params, _ ctx: MethodContext) throws -> MethodOutcome {
        let id = try p.string("lease")
        let hidden = { (l: Lease) in ctx.enforceOwnership && !ctx.caller.isAdmin && l.uid != ctx.caller.uid }
        guard let lease = ctx.store.leases.live(id), !hidden(lease) else {
            return MethodOutcome(.object(["released": false]))
        }
        guard ctx.caller.isAdmin || (lease.holder != nil && lease.holder == ctx.connection) else {
            throw RPCError.application(.permissionDenied, "lease \(id) belongs to another connection")
        }
        guard let released = ctx.store.leases.release(id) else { return MethodOutcome(.object(["released": false])) }
        try leasesEnded([released], ctx.store)
        return MethodOutcome(.object(["released": true]))
    }

    /// After leases end: files they kept become due for unlinking again.
    public static func leasesEnded(_ leases: [Lease], _ store: Store) throws {
        guard !leases.isEmpty, !store.isReadOnly else { return }
        _ = try store.leasesEnded(leases)
    }

    /// The same for the files kept of leases ended since the last sweep.
    public static func leasesEnded(_ ended: EndedLeaseFiles, _ store: Store) throws {
        guard !ended.isEmpty, !store.isReadOnly else { return }
        _ = try store.leasesEnded(ended)
    }
}
