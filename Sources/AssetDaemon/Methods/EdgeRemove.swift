// edge.remove {name, source, destination, reason?} → {commit, removed}. Reason `edge` (the
// default) fires nothing; sourceDeleted / destinationDeleted fire that side's rules.

import AssetStore
import ControlProtocol

extension MethodTable {
    static func edgeRemove(_ p: Params, _ ctx: MethodContext) throws -> MethodOutcome {
        let done = try ctx.store.write(owner: ctx.caller.userName) { tx in try applyEdgeRemove(p, tx, ctx) }
        var result = done.value.objectValue ?? [:]
        result["commit"] = .int(done.report.commit)
        return MethodOutcome(.object(result), commit: done.report)
    }

    static func applyEdgeRemove(_ p: Params, _ tx: WriteTransaction, _ ctx: MethodContext) throws -> JSONValue {
        let source = try p.ref("source")
        let reasonText = try p.optionalString("reason") ?? "edge"
        guard let reason = EdgeRemovalReason(rawValue: reasonText) else {
            throw RPCError.invalidParams("reason must be edge, sourceDeleted or destinationDeleted")
        }
        let destination = try p.end("destination")
        try checkOwner(source, tx, ctx)
        if case .object(let d) = destination { try checkOwner(d, tx, ctx) }
        let removed = try tx.removeEdge(name: try p.string("name"), source: source, destination: destination, reason: reason)
        return .object(["removed": .bool(removed)])
    }
}
