// A non-admin's write that can grow what its uid's leases keep from eviction, counted against
// its quota as a lease is (LeaseQuota.swift), before it goes to the writer: a put of an object
// they name or naming a file they name (a file lease keeps its holders), an edge.add from such
// an object or to such a file. Counted only at the lease, these kept any amount. Whether a
// write is one is asked in memory (LeasedNames): a uid holding no lease pays one lookup.

import AssetStore
import ControlProtocol

extension MethodTable {
    /// What a put adds to what its caller's leases keep, nil if it names nothing they name
    /// (or is not counted: an admin's, without enforce_ownership, or params it fails on).
    static func leaseGrowth(put p: Params, _ ctx: MethodContext) -> LeaseGrowth? {
        guard holdsLeases(ctx), let ref = try? p.ref(), let value = p.member("value") else { return nil }
        let files = ctx.store.fileReferences(collection: ref.collection, value: value)
        guard ctx.store.leases.leasesName(uid: ctx.caller.uid, objects: [ref], files: files) else { return nil }
        return LeaseGrowth(objects: [ref], replaced: [ref], files: files)
    }

    /// The same for an edge.add: only an edge to a file adds to what its source keeps.
    static func leaseGrowth(edgeAdd p: Params, _ ctx: MethodContext) -> LeaseGrowth? {
        guard holdsLeases(ctx), let source = try? p.ref("source"),
            case .file(let reference)? = try? p.end("destination"),
            let path = try? ctx.store.roots.accept(reference).path,
            ctx.store.leases.leasesName(uid: ctx.caller.uid, objects: [source], files: [path])
        else { return nil }
        return LeaseGrowth(objects: [source], files: [path])
    }

    /// Whether a put must leave the group commit to be counted (`Method.runsAlone`).
    static func leasedPut(_ p: Params, _ ctx: MethodContext) -> Bool { leaseGrowth(put: p, ctx) != nil }

    /// A non-admin under enforce_ownership whose uid holds a lease: only its writes are looked at.
    private static func holdsLeases(_ ctx: MethodContext) -> Bool {
        ctx.enforceOwnership && !ctx.caller.isAdmin && ctx.store.leases.leasesNames(uid: ctx.caller.uid)
    }

    /// Runs `write`, refused first (`lease_limit`) if with `growth` the bytes its caller's
    /// leases keep would pass its quota. Counted in a read transaction, not in the writer, and
    /// holding the uid's lock (the one a lease's count takes) until `write` has returned,
    /// durable: the next such write or lease of that uid counts it. Only these wait.
    static func checkingLeaseGrowth<T>(
        _ growth: LeaseGrowth?, _ ctx: MethodContext, then write: () throws -> T
    ) throws -> T {
        guard let growth, let quota = leaseQuota(ctx) else { return try write() }
        let leases = ctx.store.leases
        func count() throws {
            let held = leases.leased(uid: ctx.caller.uid)
            let bytes = try ctx.store.leasedBytes(
                owner: quota.owner, objects: held.objects, files: held.files, growth: growth)
            try refuseLease(bytes, quota, or: "write less")
        }
        return try leases.counted(uid: ctx.caller.uid, count, then: write)
    }
}
