// ping → {version, commit}.

import AssetStore
import ControlProtocol

extension MethodTable {
    /// The version of assetd.
    public static let version = "0.1.0"

    static func ping(_ p: Params, _ ctx: MethodContext) throws -> MethodOutcome {
        MethodOutcome(.object(["version": .string(version), "commit": .int(try ctx.store.read { try $0.lastCommit() })]))
    }
}
