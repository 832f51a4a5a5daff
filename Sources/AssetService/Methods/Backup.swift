// backup {path} → what the engine reports: an online, consistent copy of the database in one
// SQLite file marked as a copy, which assetd starts on once restored (admins; the path is
// the daemon's, absolute).

import AssetStore
import ControlProtocol

extension MethodTable {
    static func backup(_ p: Params, _ ctx: MethodContext) throws -> MethodOutcome {
        let path = try p.string("path")
        guard path.hasPrefix("/") else { throw RPCError.invalidParams("path must be absolute") }
        var progress: (@Sendable (Int, Int) -> Void)?
        if let report = ctx.progress {
            progress = { done, total in
                report(["phase": "copy", "done": .int(Int64(done)), "total": .int(Int64(total))])
            }
        }
        return MethodOutcome(try ctx.store.backup(to: path, progress: progress))
    }
}
