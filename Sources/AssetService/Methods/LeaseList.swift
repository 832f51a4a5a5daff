// lease.list {after?, limit?} → {leases, next}: the live leases in the order they were taken,
// with their holders' connection numbers, a page at a time. With enforce_ownership a non-admin
// sees only the leases of its own uid's connections. A page past control.max_reply_bytes is
// refused (reply_too_large) as soon as it is, not after being rendered whole: a full registry
// is up to 2 × 65,536 paths of up to 4 KiB.

import AssetStore
import ControlProtocol

extension MethodTable {
    static func leaseList(_ p: Params, _ ctx: MethodContext) throws -> MethodOutcome {
        let after = try p.optionalString("after")
        let limit = Int(try p.optionalInt("limit", in: 1...100_000) ?? 1000)
        let uid: UInt32? = ctx.enforceOwnership && !ctx.caller.isAdmin ? ctx.caller.uid : nil
        let page = try ctx.store.leases.list(after: after, limit: limit) { l in uid == nil || l.uid == uid }
        var bytes = 0
        var leases = [JSONValue]()
        leases.reserveCapacity(page.leases.count)
        for l in page.leases {
            // A little under its JSON: the strings, and a bound for the rest of each value.
            bytes += 64 + l.files.reduce(0) { $0 + $1.utf8.count + 3 }
            bytes += l.objects.reduce(0) { $0 + $1.collection.utf8.count + $1.key.utf8.count + 30 }
            if bytes > ctx.replyLimit { throw StoreError.replyTooLarge(ctx.replyLimit) }
            var o = l.json.objectValue ?? [:]
            o["holder"] = l.holder.map { .int(Int64($0)) } ?? .null
            leases.append(.object(o))
        }
        let next: JSONValue = page.more ? page.leases.last.map { .string($0.id) } ?? .null : .null
        return MethodOutcome(.object(["leases": .array(leases), "next": next]))
    }
}
