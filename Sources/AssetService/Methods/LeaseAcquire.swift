// lease.acquire {objects?, files?, ttl} → {lease, expires, objects, files}: protects in-flight work
// from eviction and expiry (assetd(8), CONTROL PROTOCOL, Methods). The lease belongs to the
// connection: it ends when released, when its ttl passes, or when the connection closes. What a
// connection's leases, and all leases, hold is bounded: a lease past a bound is refused whole.

import AssetStore
import ControlProtocol

extension MethodTable {
    static func leaseAcquire(_ p: Params, _ ctx: MethodContext) throws -> MethodOutcome {
        guard let holder = ctx.connection else {
            throw RPCError.invalidParams(
                "a lease lives as long as its connection: lease.acquire needs a running daemon (--socket)")
        }
        guard let ttl = try p.optionalDuration("ttl") else { throw RPCError.invalidParams("ttl is required") }
        var objects = [ObjectRef]()
        if let items = p.value("objects") {
            guard let list = items.arrayValue else {
                throw RPCError.invalidParams("objects must be an array of {collection, key}")
            }
            for item in list { objects.append(try Params(["o": item]).ref("o")) }
        }
        let files = try p.optionalStrings("files") ?? []
        let lease = try ctx.store.leases.acquire(
            objects: objects, files: files, ttl: ttl, holder: holder, uid: ctx.caller.uid, bounds: ctx.leaseBounds)
        return MethodOutcome(lease.json)
    }
}
