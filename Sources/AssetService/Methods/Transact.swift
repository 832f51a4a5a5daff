// transact {ops: [{method, params}…]} → {commit, results, deleted, unlinks_queued}: every op
// in one write transaction, all or nothing. Ops are the object and edge methods and flush.
// Results past control.max_reply_bytes roll it back (reply_too_large), and so, for a bounded
// caller, do reads and flushes past the cascade bound's work (query_rejected).

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

    /// Ops whose work is not carried by the request: its size bounds puts and edge changes,
    /// the cascade bound deletions (and the files a put reads again, charged by the put).
    static let transactBounded: Set<String> = ["object.get", "object.list", "edge.find", "edge.count", "flush"]

    /// Results past `limit` bytes: the transaction rolls back (its reply could not be sent).
    static func resultsTooLarge(_ limit: Int) -> StoreError {
        StoreError(
            .replyTooLarge,
            "the results of this transact would be larger than \(limit) bytes (control.max_reply_bytes): nothing was "
                + "changed; read less in one transact, or outside it")
    }

    static func transact(_ p: Params, _ ctx: MethodContext) throws -> MethodOutcome {
        guard let ops = p.value("ops")?.arrayValue else { throw RPCError.invalidParams("ops must be an array") }
        // Each op with its params, its index and whether it is bounded (transactBounded).
        var parsed = [(Op, Params, Int, Bool)]()
        // What its puts and edges add to what the caller's leases keep, all as if they took
        // effect: counted before the transaction goes to the writer.
        var growths = [LeaseGrowth]()
        for (i, op) in ops.enumerated() {
            guard let method = op["method"]?.stringValue else {
                throw RPCError.invalidParams("ops[\(i)].method is required")
            }
            guard let run = transactOps[method] else {
                throw RPCError.invalidParams("ops[\(i)]: \(method) cannot be used in transact")
            }
            let params = op["params"] ?? .object([:])
            guard params.objectValue != nil else { throw RPCError.invalidParams("ops[\(i)].params must be an object") }
            parsed.append((run, Params(params), i, transactBounded.contains(method)))
            let grows: LeaseGrowth? =
                switch method {
                case "object.put": leaseGrowth(put: Params(params), ctx, named: false)
                case "edge.add": leaseGrowth(edgeAdd: Params(params), ctx, named: false)
                default: nil
                }
            if let grows { growths.append(grows) }
        }
        let growth = keptGrowth(growths, ctx)
        // Only deletes: it frees space, and may use the reserve on a full disk (assetd(8)).
        let deletes = ops.allSatisfy { $0["method"]?.stringValue == "object.delete" }
        let done = try checkingLeaseGrowth(growth, ctx) { refusal in
            try apply(parsed, ctx, freesSpace: deletes, refusal: refusal)
        }
        return MethodOutcome(deletionResult(done.report, ctx, results: .array(done.value)), commit: done.report)
    }

    /// What the puts and edges (`growths`, each its object's) add to what the caller's leases
    /// keep once they all took effect, nil if nothing: every op of an object they name or
    /// that one of them gives a file they name. A put of A then an edge from A to a leased
    /// file keeps the put's files too; a put of an object they never keep is not counted.
    private static func keptGrowth(_ growths: [LeaseGrowth], _ ctx: MethodContext) -> LeaseGrowth? {
        let leases = ctx.store.leases
        var kept = Set<ObjectRef>()
        for g in growths where leases.leasesName(uid: ctx.caller.uid, objects: g.objects, files: g.files) {
            kept.formUnion(g.objects)
        }
        guard !kept.isEmpty else { return nil }
        return growths.filter { $0.objects.contains(where: kept.contains) }.reduce(LeaseGrowth()) { $0.adding($1) }
    }

    /// The ops in one write transaction, rolled back with `refusal` once they all passed.
    private static func apply(
        _ parsed: [(Op, Params, Int, Bool)], _ ctx: MethodContext, freesSpace deletes: Bool, refusal: StoreError?
    ) throws -> Committed<[JSONValue]> {
        try ctx.store.write(owner: ctx.caller.userName, freesSpace: deletes) { tx in
            var size = 0
            var scratch = [UInt8]()
            let results = try parsed.map { run, params, i, bounded in
                do {
                    // An edge.find page (with `limit`) fills what the results before it left
                    // (and its comma), not the whole limit: it ends early, `next` set, where
                    // the transact would be refused.
                    var sized = ctx
                    sized.replyUsed = size + 1
                    // Reads and flushes hold every other writer: bounded for those whose
                    // deletions are (WriteTransaction+ReadBound.swift).
                    let result =
                        try bounded
                        ? tx.boundedRead(ctx.cascadeLimit) { try run(params, tx, sized) } : run(params, tx, sized)
                    guard ctx.replyLimit != .max else { return result }
                    // Refused before commit, unlike a reply's deletion lists: nothing is done yet.
                    scratch.removeAll(keepingCapacity: true)
                    result.write(to: &scratch)
                    size += scratch.count + 1
                    if size > ctx.replyLimit { throw Self.resultsTooLarge(ctx.replyLimit) }
                    return result
                } catch var e as RPCError {
                    e.message = "ops[\(i)]: " + e.message
                    throw e
                } catch let e as StoreError {
                    throw StoreError(e.code, "ops[\(i)]: " + e.message, detail: e.detail)
                }
            }
            if let refusal { throw refusal }
            return results
        }
    }
}
