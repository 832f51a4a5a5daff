// A non-admin's leases against its quota (control.enforce_ownership, [[policy.quota]]), counted
// as a lease is acquired: without it an owner renewing leases kept any amount, and the byte
// budget took the rest from the other owners. It is no bound on what the leases keep later
// (DESIGN, 8: growth after the count, rules' keeps, several uids of one name).

import AssetStore
import ControlProtocol

extension MethodTable {
    /// With enforce_ownership and a quota for the caller's name, refuses a non-admin's lease
    /// (`lease_limit`) if the bytes its uid's live leases and this one name (the
    /// files its leased objects hold, and those of its objects holding its leased files, each
    /// once) would pass that quota. Judged as the lease is taken, as ownership is: an object
    /// put or a file registered later is not counted until a lease of it is asked for again.
    static func checkLeaseQuota(objects: [ObjectRef], files: [String], _ ctx: MethodContext) throws {
        guard ctx.enforceOwnership, !ctx.caller.isAdmin else { return }
        let user = ctx.caller.userName
        guard let quota = ctx.store.policy?.quotas.first(where: { OwnerName.same($0.owner, user) }) else { return }
        let held = ctx.store.leases.leased(uid: ctx.caller.uid)
        let bytes = try ctx.store.read { tx in
            try tx.leasedBytes(owner: user, objects: held.objects + objects, files: held.files + files)
        }
        guard bytes <= quota.maxBytes else {
            throw StoreError(
                .leaseLimit,
                "the leases of \(user) would keep \(bytes) bytes from eviction, more than its quota "
                    + "(policy.quota \(user) = \(quota.maxBytes)): release leases first, or lease less",
                detail: ["limit": "policy.quota", "value": .int(quota.maxBytes)])
        }
    }
}
