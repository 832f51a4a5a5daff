// vacuum → what the engine reports: rebuilds the database file to give free pages back (admins).

import AssetStore
import ControlProtocol

extension MethodTable {
    static func vacuum(_ p: Params, _ ctx: MethodContext) throws -> MethodOutcome {
        MethodOutcome(try ctx.store.vacuum())
    }
}
