// A non-admin's write that can grow what its uid's leases keep from eviction, counted against
// its quota as a lease is (LeaseQuota.swift), before it goes to the writer: a put of an object
// they name or naming a file they name (a file lease keeps its holders), an edge.add from such
// an object or to such a file. Counted only at the lease, these kept any amount. The daemon
// asks on its loop only whether the uid holds a lease and has a quota (`countsLeases`, O(1)):
// then the write runs on the pool, one of that uid's at a time, and the per-path test is here.

import AssetStore
import ControlProtocol

extension MethodTable {
    /// How a method stands to its caller's lease quota, for the daemon's routing.
    public enum LeaseCounting: Sendable {
        /// Nothing it does is counted.
        case none
        /// A write that can grow what its caller's leases keep (a put, an edge.add, a transact).
        case write
        /// A lease: counted as it is acquired.
        case lease
    }

    /// Whether a call of a `counting` method must be counted against its caller's quota, one
    /// of its uid's at a time: a lease of a non-admin with a quota under enforce_ownership, or
    /// such a one's write while its uid holds a lease (or has such calls `queued`). O(1) but
    /// the quota's lookup, made only for those: the daemon asks it on its loop.
    public static func countsLeases(_ counting: LeaseCounting, _ ctx: MethodContext, queued: Bool) -> Bool {
        guard counting != .none, ctx.enforceOwnership, !ctx.caller.isAdmin else { return false }
        guard counting == .lease || queued || ctx.store.leases.holdsLeases(uid: ctx.caller.uid) else { return false }
        return leaseQuota(ctx) != nil
    }

    /// What a put adds to what its caller's leases keep, nil if it names nothing they name
    /// (or is not counted: an admin's, without enforce_ownership, or params it fails on);
    /// not `named`: what it would add were its object kept (a transact's, Transact.swift).
    static func leaseGrowth(put p: Params, _ ctx: MethodContext, named: Bool = true) -> LeaseGrowth? {
        guard holdsLeases(ctx), let ref = try? p.ref(), let value = p.member("value") else { return nil }
        let files = ctx.store.fileReferences(collection: ref.collection, value: value)
        guard !named || ctx.store.leases.leasesName(uid: ctx.caller.uid, objects: [ref], files: files) else {
            return nil
        }
        return LeaseGrowth(objects: [ref], replaced: [ref], files: files)
    }

    /// The same for an edge.add: only an edge to a file adds to what its source keeps.
    static func leaseGrowth(edgeAdd p: Params, _ ctx: MethodContext, named: Bool = true) -> LeaseGrowth? {
        guard holdsLeases(ctx), let source = try? p.ref("source"),
            case .file(let reference)? = try? p.end("destination"),
            let path = try? ctx.store.roots.accept(reference).path,
            !named || ctx.store.leases.leasesName(uid: ctx.caller.uid, objects: [source], files: [path])
        else { return nil }
        return LeaseGrowth(objects: [source], files: [path])
    }

    /// A non-admin under enforce_ownership whose uid holds a lease: only its writes are looked at.
    private static func holdsLeases(_ ctx: MethodContext) -> Bool {
        ctx.enforceOwnership && !ctx.caller.isAdmin && ctx.store.leases.holdsLeases(uid: ctx.caller.uid)
    }

    /// Runs `write`, given the refusal (`lease_limit`) to throw once its own checks have passed
    /// if with `growth` the bytes its caller's leases keep would pass its quota and be more
    /// than they keep now: the write's own errors (permission_denied, a path's) come first, as
    /// for any write, and one that keeps or shrinks what they keep passes, even over the quota.
    /// Counted in a read transaction, not in the writer, and holding the uid's lock (the one a
    /// lease's count takes) until `write` has returned, durable: the next such write or lease
    /// of that uid counts it. In the daemon the lock is not waited for: that uid's counted
    /// calls reach the pool one at a time.
    static func checkingLeaseGrowth<T>(
        _ growth: LeaseGrowth?, _ ctx: MethodContext, then write: (_ refusal: StoreError?) throws -> T
    ) throws -> T {
        guard let growth, let quota = leaseQuota(ctx) else { return try write(nil) }
        let (leases, caller) = (ctx.store.leases, ctx.caller)
        var refusal: StoreError?
        func count() throws {
            let held = leases.leased(uid: caller.uid)
            let check = FileReferenceCheck(uid: caller.uid, owner: caller.userName) {
                UnlinkAccess.refusal($0, uid: caller.uid, gids: caller.gids)
            }
            let after = try ctx.store.leasedBytes(
                owner: quota.owner, objects: held.objects, files: held.files, growth: growth, check: check)
            guard after > quota.maxBytes else { return }
            let now = try ctx.store.read { tx in
                try tx.leasedBytes(owner: quota.owner, objects: held.objects, files: held.files)
            }
            if after > now { refusal = leaseRefusal(after, quota, or: "write less") }
        }
        return try leases.counted(uid: caller.uid, count) { try write(refusal) }
    }
}
