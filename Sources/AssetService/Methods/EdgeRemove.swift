// edge.remove {name, source, destination, reason?} → {commit, removed}. Reason `edge` (the
// default) fires nothing; sourceDeleted / destinationDeleted fire that side's rules. Removing
// an edge that does not exist commits nothing: removed false, commit the current one.

import AssetStore
import ControlProtocol

extension MethodTable {
    static func edgeRemove(_ p: Params, _ ctx: MethodContext) throws -> MethodOutcome {
        let done: Committed<JSONValue>
        do {
            done = try ctx.store.write(owner: ctx.caller.userName) { tx in
                let result = try applyEdgeRemove(p, tx, ctx)
                // Rolled back: a commit that changed nothing would use up a number.
                if result["removed"] == false { throw NothingRemoved(current: tx.commit - 1) }
                return result
            }
        } catch let none as NothingRemoved {
            return MethodOutcome(.object(["commit": .int(none.current), "removed": false]))
        }
        var result = done.value.objectValue ?? [:]
        result["commit"] = .int(done.report.commit)
        return MethodOutcome(.object(result), commit: done.report)
    }

    /// Thrown to roll back an `edge.remove` that found no edge.
    private struct NothingRemoved: Error {
        /// The last commit, which the reply reports.
        let current: Int64
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
        tx.limitCascade(to: ctx.cascadeLimit)
        let removed = try tx.removeEdge(
            name: try p.string("name"), source: source, destination: destination, reason: reason)
        return .object(["removed": .bool(removed)])
    }
}
