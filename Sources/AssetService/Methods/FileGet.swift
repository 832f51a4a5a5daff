// file.get {path} → {file, edges, retained_by} or null: why is this file still here?

import AssetStore
import ControlProtocol

extension MethodTable {
    static func fileGet(_ p: Params, _ ctx: MethodContext) throws -> MethodOutcome {
        let path = try p.string("path")
        guard let report = try ctx.store.read({ try $0.file(path) }) else { return MethodOutcome(.null) }
        return MethodOutcome(
            .object([
                "file": report.record.json, "edges": .array(report.edges.map(\.json)),
                "retained_by": .int(Int64(report.retainedBy)),
            ]))
    }
}
