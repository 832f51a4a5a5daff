// stats → the store's figures; the daemon adds its own (connections, requests, latency,
// buffers) on the loop before replying.

import AssetStore
import ControlProtocol

extension MethodTable {
    static func stats(_ p: Params, _ ctx: MethodContext) throws -> MethodOutcome {
        MethodOutcome(try ctx.store.statistics().json, action: .addDaemonStats)
    }
}
