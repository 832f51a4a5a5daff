// sweep → {unlinked, failed, skipped, deferred, pending}: runs due unlinks now, retrying
// failed ones.

import AssetStore
import ControlProtocol

extension MethodTable {
    static func sweep(_ p: Params, _ ctx: MethodContext) throws -> MethodOutcome {
        let report = try ctx.store.sweep(retryFailed: true)
        return MethodOutcome(
            .object([
                "unlinked": .int(Int64(report.unlinked.count)), "failed": .int(Int64(report.failed.count)),
                "skipped": .int(Int64(report.skipped.count)), "deferred": .int(Int64(report.deferred.count)),
                "pending": .int(Int64(report.pending)),
            ]), sweep: report)
    }
}
