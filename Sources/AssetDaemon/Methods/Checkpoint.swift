// checkpoint → {checkpointed: true}: writes the WAL back into the database file (admins).

import AssetStore
import ControlProtocol

extension MethodTable {
    static func checkpoint(_ p: Params, _ ctx: MethodContext) throws -> MethodOutcome {
        try ctx.store.checkpoint()
        return MethodOutcome(.object(["checkpointed": true]))
    }
}
