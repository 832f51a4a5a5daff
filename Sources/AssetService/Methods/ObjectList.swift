// object.list {collection, after?, limit?} → {keys, next}.

import AssetStore
import ControlProtocol

extension MethodTable {
    static func objectList(_ p: Params, _ ctx: MethodContext) throws -> MethodOutcome {
        let (c, after, limit) = try listParams(p)
        let page = try ctx.store.read { try $0.list(collection: c, after: after, limit: limit) }
        return MethodOutcome(listResult(page))
    }

    static func applyList(_ p: Params, _ tx: WriteTransaction, _ ctx: MethodContext) throws -> JSONValue {
        let (c, after, limit) = try listParams(p)
        return listResult(try tx.list(collection: c, after: after, limit: limit))
    }

    private static func listParams(_ p: Params) throws -> (String, String?, Int) {
        (
            try p.string("collection"), try p.optionalString("after"),
            Int(try p.optionalInt("limit", in: 1...100_000) ?? 1000)
        )
    }

    private static func listResult(_ page: (keys: [String], next: String?)) -> JSONValue {
        .object(["keys": .array(page.keys.map(JSONValue.string)), "next": page.next.map(JSONValue.string) ?? .null])
    }
}
