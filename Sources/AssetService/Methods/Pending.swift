// pending {limit?} → {pending: [...]}: the unlink queue's entries.

import AssetStore
import ControlProtocol

extension MethodTable {
    static func pending(_ p: Params, _ ctx: MethodContext) throws -> MethodOutcome {
        let limit = Int(try p.optionalInt("limit", in: 1...100_000) ?? 100)
        return MethodOutcome(.object(["pending": .array(try ctx.store.pending(limit: limit).map(\.json))]))
    }
}
