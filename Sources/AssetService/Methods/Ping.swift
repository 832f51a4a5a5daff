// ping → {version, protocol, commit}: answered on the loop from the daemon's last commit, so
// it stays fast while scans fill the threads; in-process the store is asked.

import AssetStore
import ControlProtocol

extension MethodTable {
    static func ping(_ p: Params, _ ctx: MethodContext) throws -> MethodOutcome {
        let commit = try ctx.lastCommit ?? ctx.store.read { try $0.lastCommit() }
        return MethodOutcome(
            .object([
                "version": .string(Version.product), "protocol": .int(Int64(Version.controlProtocol)),
                "commit": .int(commit),
            ]))
    }
}
