// transact {ops: [{method, params}…]} → {commit, results, deleted, unlinks_queued}: every op
// in one write transaction, all or nothing. Ops are the object and edge methods and flush.

import AssetStore
import ControlProtocol

extension MethodTable {
    typealias Op = @Sendable (Params, WriteTransaction, MethodContext) throws -> JSONValue

    static let transactOps: [String: Op] = [
        "object.put": applyPut, "object.get": applyGet, "object.delete": applyDelete, "object.touch": applyTouch,
        "object.list": applyList, "edge.add": applyEdgeAdd, "edge.remove": applyEdgeRemove,
        "edge.find": applyEdgeFind, "edge.count": applyEdgeCount,
        "flush": { _, tx, _ in
            try tx.flush(); return .object([:])
        },
    ]

    static func transact(_ p: Params, _ ctx: MethodContext) throws -> MethodOutcome {
        guard let ops = p.value("ops")?.arrayValue else { throw RPCError.invalidParams("ops must be an array") }
        var parsed = [(Op, Params, Int)]()
        for (i, op) in ops.enumerated() {
            guard let method = op["method"]?.stringValue else {
                throw RPCError.invalidParams("ops[\(i)].method is required")
            }
            guard let run = transactOps[method] else {
                throw RPCError.invalidParams("ops[\(i)]: \(method) cannot be used in transact")
            }
            let params = op["params"] ?? .object([:])
            guard params.objectValue != nil else { throw RPCError.invalidParams("ops[\(i)].params must be an object") }
            parsed.append((run, Params(params), i))
        }
        // Only deletes: it frees space, and may use the reserve on a full disk (assetd(8)).
        let deletes = ops.allSatisfy { $0["method"]?.stringValue == "object.delete" }
        let done = try ctx.store.write(owner: ctx.caller.userName, freesSpace: deletes) { tx in
            try parsed.map { run, params, i in
                do { return try run(params, tx, ctx) } catch var e as RPCError {
                    e.message = "ops[\(i)]: " + e.message
                    throw e
                } catch let e as StoreError {
                    throw StoreError(e.code, "ops[\(i)]: " + e.message, detail: e.detail)
                }
            }
        }
        return MethodOutcome(deletionResult(done.report, ctx, results: .array(done.value)), commit: done.report)
    }
}
