// stats → the store's figures; the daemon adds its own (connections, requests, latency,
// buffers) on the loop before replying. The owners (two members per owner, the only part
// that grows with the store) are cut to what fits control.max_reply_bytes, the number left
// out in `owners_omitted`.

import AssetStore
import ControlProtocol
import JSON

extension MethodTable {
    /// What the reply keeps for the daemon's figures and the reply's envelope besides its id:
    /// they take about 600 bytes.
    static let statsDaemonAllowance = 2048

    static func stats(_ p: Params, _ ctx: MethodContext) throws -> MethodOutcome {
        var stats = try ctx.store.statistics()
        let owners = stats.owners
        var kept = owners.count
        if ctx.replyLimit != Int.max, !owners.isEmpty {
            stats.owners = []
            var text = [UInt8]()
            stats.json.write(to: &text)
            ctx.requestID?.write(to: &text)
            var room = ctx.replyLimit - text.count - statsDaemonAllowance
            kept = 0
            for o in owners {
                text.removeAll(keepingCapacity: true)
                JSONValue.writeString(o.owner, to: &text)
                JSONValue.writeInt(o.bytes, to: &text)
                // In `owners` as {"bytes":…,"owner":…}, and in `bytes_per_owner` as "…":…, each
                // with its comma.
                room -= 2 * text.count + 22
                guard room >= 0 else { break }
                kept += 1
            }
            stats.owners = Array(owners.prefix(kept))
        }
        var json = stats.json
        if kept < owners.count, case .object(var o) = json {
            o["owners_omitted"] = .int(Int64(owners.count - kept))
            json = .object(o)
        }
        return MethodOutcome(json, action: .addDaemonStats)
    }
}
