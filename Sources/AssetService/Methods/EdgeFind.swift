// edge.find / edge.count {name?, source?, destination?} → {edges} / {count}.

import AssetStore
import ControlProtocol

extension MethodTable {
    static func edgeFind(_ p: Params, _ ctx: MethodContext) throws -> MethodOutcome {
        let filter = try edgeFilter(p)
        return MethodOutcome(.object(["edges": .array(try ctx.store.read { try $0.edges(filter) }.map(\.json))]))
    }

    static func edgeCount(_ p: Params, _ ctx: MethodContext) throws -> MethodOutcome {
        let filter = try edgeFilter(p)
        return MethodOutcome(.object(["count": .int(Int64(try ctx.store.read { try $0.edgeCount(filter) }))]))
    }

    static func applyEdgeFind(_ p: Params, _ tx: WriteTransaction, _ ctx: MethodContext) throws -> JSONValue {
        .object(["edges": .array(try tx.edges(try edgeFilter(p)).map(\.json))])
    }

    static func applyEdgeCount(_ p: Params, _ tx: WriteTransaction, _ ctx: MethodContext) throws -> JSONValue {
        .object(["count": .int(Int64(try tx.edgeCount(try edgeFilter(p))))])
    }

    static func edgeFilter(_ p: Params) throws -> EdgeFilter {
        EdgeFilter(
            name: try p.optionalString("name"), source: p.value("source") == nil ? nil : try p.ref("source"),
            destination: try p.optionalEnd("destination"))
    }
}
