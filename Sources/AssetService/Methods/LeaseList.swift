// lease.list {after?, limit?} → {leases, next}: the live leases in the order they were taken,
// with their holders' connection numbers, a page at a time. With enforce_ownership a non-admin
// sees only the leases of its own uid's connections. A page ends early, `next` set, before the
// lease that would take it past control.max_reply_bytes (a full registry is up to 2 × 65,536
// paths of up to 4 KiB), so a client paging on never meets the limit; only a lease past it
// alone is refused (reply_too_large).

import AssetStore
import ControlProtocol

extension MethodTable {
    static func leaseList(_ p: Params, _ ctx: MethodContext) throws -> MethodOutcome {
        let after = try p.optionalString("after")
        let limit = Int(try p.optionalInt("limit", in: 1...100_000) ?? 1000)
        let uid: UInt32? = ctx.enforceOwnership && !ctx.caller.isAdmin ? ctx.caller.uid : nil
        let page = try ctx.store.leases.list(after: after, limit: limit) { l in uid == nil || l.uid == uid }
        // What the reply takes beside its leases: the envelope and `next` (512 is ample), and
        // the id as rendered (a client may send a long one).
        var id = [UInt8]()
        ctx.requestID?.write(to: &id)
        var bytes = 512 + id.count
        var leases = [JSONValue]()
        leases.reserveCapacity(page.leases.count)
        var cut = false
        for l in page.leases {
            var o = l.json.objectValue ?? [:]
            o["holder"] = l.holder.map { .int(Int64($0)) } ?? .null
            let lease = JSONValue.object(o)
            // Measured as rendered (escapes included), and a comma.
            bytes += lease.serialized().utf8.count + 1
            if bytes > ctx.replyLimit {
                if leases.isEmpty { throw StoreError.replyTooLarge(ctx.replyLimit) }
                cut = true
                break
            }
            leases.append(lease)
        }
        let last = leases.last?["lease"] ?? .null
        let next: JSONValue = page.more || cut ? last : .null
        return MethodOutcome(.object(["leases": .array(leases), "next": next]))
    }
}
