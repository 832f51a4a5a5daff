// A non-admin's leases against its quota (control.enforce_ownership, [[policy.quota]]), counted
// as a lease is acquired, one lease of a uid at a time, and again before a write that can grow
// what they keep (LeasedWrites.swift): without it an owner renewing leases kept any amount, and
// the byte budget took the rest from the other owners. It is no bound on what they keep
// otherwise (DESIGN, 8: rules' keeps, several uids of one name).

import AssetStore
import ControlProtocol

extension MethodTable {
    /// With enforce_ownership and a quota for the caller's name, refuses a non-admin's lease
    /// (`lease_limit`) if the bytes its uid's live leases and this one name (the
    /// files its leased objects hold, and those of its objects holding its leased files, each
    /// once) would pass that quota. Judged as the lease is taken, as ownership is: an object
    /// put or a file registered later is not counted until a lease of it is asked for again,
    /// or a write that can grow it (`checkingLeaseGrowth`).
    /// Counted and granted (`grant`) with no other lease of its uid in between: two at once,
    /// each passing alone, would pass the quota together.
    static func checkLeaseQuota<T>(
        objects: [ObjectRef], files: [String], _ ctx: MethodContext, then grant: () throws -> T
    ) throws -> T {
        guard let quota = leaseQuota(ctx) else { return try grant() }
        let leases = ctx.store.leases
        func count() throws {
            let held = leases.leased(uid: ctx.caller.uid)
            let bytes = try ctx.store.read { tx in
                try tx.leasedBytes(owner: quota.owner, objects: held.objects + objects, files: held.files + files)
            }
            try refuseLease(bytes, quota, or: "lease less")
        }
        return try leases.counted(uid: ctx.caller.uid, count, then: grant)
    }

    /// The quota a non-admin's leases are counted against, under enforce_ownership.
    static func leaseQuota(_ ctx: MethodContext) -> (owner: String, maxBytes: Int64)? {
        guard ctx.enforceOwnership, !ctx.caller.isAdmin else { return nil }
        let user = ctx.caller.userName
        guard let quota = ctx.store.policy?.quotas.first(where: { OwnerName.same($0.owner, user) }) else { return nil }
        return (user, quota.maxBytes)
    }

    /// Refuses (`lease_limit`) `bytes` past `quota`; `or` says what else the caller can do.
    static func refuseLease(_ bytes: Int64, _ quota: (owner: String, maxBytes: Int64), or: String) throws {
        guard bytes > quota.maxBytes else { return }
        throw leaseRefusal(bytes, quota, or: or)
    }

    /// The refusal (`lease_limit`) of `bytes` past `quota`.
    static func leaseRefusal(_ bytes: Int64, _ quota: (owner: String, maxBytes: Int64), or: String) -> StoreError {
        let user = quota.owner
        return StoreError(
            .leaseLimit,
            "the leases of \(user) would keep \(bytes) bytes from eviction, more than its quota "
                + "(policy.quota \(user) = \(quota.maxBytes)): release leases first, or \(or)",
            detail: ["limit": "policy.quota", "value": .int(quota.maxBytes)])
    }
}
