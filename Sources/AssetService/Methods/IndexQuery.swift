// index.query {index?, where, params?, include?} → {rows} and index.aggregate {index?,
// function, where?, params?, group_by?} → {value} or {rows} (assetd(8), CONTROL PROTOCOL, Methods).

import AssetStore
import ControlProtocol

extension MethodTable {
    static func indexQuery(_ p: Params, _ ctx: MethodContext) throws -> MethodOutcome {
        let includeText = try p.optionalString("include") ?? "keys"
        guard let include = IndexInclude(rawValue: includeText) else {
            throw RPCError.invalidParams("include must be keys, rows or objects")
        }
        let rows = try ctx.store.query(
            index: try p.optionalString("index") ?? IndexDefinition.defaultName,
            clause: try p.optionalString("where") ?? "", parameters: try queryParameters(p), include: include,
            replyLimit: ctx.replyLimit, cancellation: ctx.queryCancellation)
        return MethodOutcome(.object(["rows": .array(rows.map(\.json))]))
    }

    static func indexAggregate(_ p: Params, _ ctx: MethodContext) throws -> MethodOutcome {
        let result = try ctx.store.aggregate(
            index: try p.optionalString("index") ?? IndexDefinition.defaultName, function: try p.string("function"),
            clause: try p.optionalString("where") ?? "", parameters: try queryParameters(p),
            groupBy: try p.optionalStrings("group_by") ?? [], replyLimit: ctx.replyLimit,
            cancellation: ctx.queryCancellation)
        return MethodOutcome(result.json)
    }

    private static func queryParameters(_ p: Params) throws -> [JSONValue] {
        guard let v = p.value("params") else { return [] }
        guard let items = v.arrayValue else { throw RPCError.invalidParams("params must be an array") }
        return items
    }
}
