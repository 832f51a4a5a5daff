// pending.forget {paths} → {forgotten}: drops queued unlinks without unlinking (admins). For
// rows that can never succeed; the files stay on disk.

import AssetStore
import ControlProtocol

extension MethodTable {
    static func pendingForget(_ p: Params, _ ctx: MethodContext) throws -> MethodOutcome {
        guard let paths = try p.optionalStrings("paths"), !paths.isEmpty else {
            throw RPCError.invalidParams("paths must be a non-empty array of paths")
        }
        let gone = try ctx.store.forgetQueued(paths)
        return MethodOutcome(.object(["forgotten": .array(gone.map(JSONValue.string))]))
    }
}
