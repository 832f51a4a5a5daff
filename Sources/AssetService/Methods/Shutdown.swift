// shutdown → {stopping: true} (admins): the daemon stops after replying.

import AssetStore
import ControlProtocol

extension MethodTable {
    static func shutdown(_ p: Params, _ ctx: MethodContext) throws -> MethodOutcome {
        MethodOutcome(.object(["stopping": true]), action: .shutdown)
    }
}
