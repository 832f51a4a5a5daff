// index.define (a user index; rebuilt when changed) → {commit}; index.list → {indexes}.

import AssetStore
import ControlProtocol

extension MethodTable {
    static func indexDefine(_ p: Params, _ ctx: MethodContext) throws -> MethodOutcome {
        try checkAdminIfEnforcing("index.define", ctx)
        var fields = p.object
        fields["progress"] = nil  // the session's flag, not a field of the definition
        let def = try IndexDefinition(json: .object(fields))
        var progress: (@Sendable (IndexRebuildProgress) -> Void)?
        if let report = ctx.progress {
            progress = { r in
                report([
                    "phase": .string("rebuild \(r.index)"), "done": .int(Int64(r.done)), "total": .int(Int64(r.total)),
                ])
            }
        }
        return committed(
            try ctx.store.write(owner: ctx.caller.userName) { tx in
                try tx.defineIndex(def, progress: progress)
            }.report)
    }

    static func indexList(_ p: Params, _ ctx: MethodContext) throws -> MethodOutcome {
        let defined = try ctx.store.read { try $0.indexes() }
        let builtIn: JSONValue = .object([
            "name": "default", "builtin": true,
            "columns": .array(IndexDefinition.defaultColumns.map(JSONValue.string)),
        ])
        return MethodOutcome(.object(["indexes": .array([builtIn] + defined.map(\.json))]))
    }
}
