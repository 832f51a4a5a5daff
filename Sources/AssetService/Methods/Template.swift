// template.set {collection, edges} → {commit} (re-derives the collection's edges) and
// template.get {collection} → {collection, edges}.

import AssetStore
import ControlProtocol

extension MethodTable {
    static func templateSet(_ p: Params, _ ctx: MethodContext) throws -> MethodOutcome {
        try checkAdminIfEnforcing("template.set", ctx)
        let collection = try p.string("collection")
        guard let items = p.value("edges")?.arrayValue else { throw RPCError.invalidParams("edges must be an array") }
        let edges = try items.map { e throws(StoreError) in try EdgeTemplate(json: e) }
        return committed(
            try ctx.store.write(owner: ctx.caller.userName) { tx in
                try tx.setTemplate(collection: collection, edges: edges)
            }.report)
    }

    static func templateGet(_ p: Params, _ ctx: MethodContext) throws -> MethodOutcome {
        let collection = try p.string("collection")
        let edges = try ctx.store.read { try $0.template(collection: collection) }
        return MethodOutcome(.object(["collection": .string(collection), "edges": .array(edges.map(\.json))]))
    }
}
