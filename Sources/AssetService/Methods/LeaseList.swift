// lease.list → {leases}: the live leases, soonest to lapse first, with their holders'
// connection numbers.

import AssetStore
import ControlProtocol

extension MethodTable {
    static func leaseList(_ p: Params, _ ctx: MethodContext) throws -> MethodOutcome {
        let leases = ctx.store.leases.active().map { l -> JSONValue in
            var o = l.json.objectValue ?? [:]
            o["holder"] = l.holder.map { .int(Int64($0)) } ?? .null
            return .object(o)
        }
        return MethodOutcome(.object(["leases": .array(leases)]))
    }
}
