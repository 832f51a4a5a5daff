// checkpoint → {checkpointed: true, emptied}: writes the WAL back into the database file
// (admins); emptied is false if a reader of another process kept part of it.

import AssetStore
import ControlProtocol

extension MethodTable {
    static func checkpoint(_ p: Params, _ ctx: MethodContext) throws -> MethodOutcome {
        let emptied = try ctx.store.checkpoint()
        return MethodOutcome(.object(["checkpointed": true, "emptied": .bool(emptied)]))
    }
}
