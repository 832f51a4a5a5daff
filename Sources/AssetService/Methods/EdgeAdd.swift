// edge.add {name, source, destination, rules} → {commit}.

import AssetStore
import ControlProtocol

extension MethodTable {
    static func edgeAdd(_ p: Params, _ ctx: MethodContext) throws -> MethodOutcome {
        try checkingLeaseGrowth(leaseGrowth(edgeAdd: p, ctx), ctx) { refusal in
            committed(
                try ctx.store.write(owner: ctx.caller.userName) { tx in
                    _ = try applyEdgeAdd(p, tx, ctx)
                    if let refusal { throw refusal }  // rolled back, its own errors told first
                }.report)
        }
    }

    static func applyEdgeAdd(_ p: Params, _ tx: WriteTransaction, _ ctx: MethodContext) throws -> JSONValue {
        let source = try p.ref("source")
        let destination = try p.end("destination")
        // Both ends: an edge's rules can delete its destination (and its source).
        try checkOwner(source, tx, ctx)
        if case .object(let d) = destination { try checkOwner(d, tx, ctx) }
        let name = try p.string("name")
        let rules = try DeleteRules(json: p.object["rules"] ?? .array([]))
        // The look at a file it names is charged to the caller's allowance, as a put's is.
        tx.limitCascade(to: ctx.cascadeLimit)
        try checkingFiles(tx, ctx) {
            try tx.addEdge(name: name, source: source, destination: destination, rules: rules)
        }
        return .object([:])
    }
}
