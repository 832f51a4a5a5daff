// sweep → {unlinked, failed, skipped, deferred, pending}: runs due unlinks now, retrying
// failed ones at once for an admin only: each retry takes the write lock, and a client
// calling sweep in a loop must not hold it over and over on rows that keep failing.

import AssetStore
import ControlProtocol

extension MethodTable {
    static func sweep(_ p: Params, _ ctx: MethodContext) throws -> MethodOutcome {
        // An admin's sweep also ends a restore's hold on the copy's queued unlinks (assetctl(1), restore).
        let report = try ctx.store.sweep(retryFailed: ctx.caller.isAdmin, releasingRestoreHold: ctx.caller.isAdmin)
        return MethodOutcome(
            .object([
                "unlinked": .int(Int64(report.unlinked.count)), "failed": .int(Int64(report.failed.count)),
                "skipped": .int(Int64(report.skipped.count)), "deferred": .int(Int64(report.deferred.count)),
                "pending": .int(Int64(report.pending)),
            ]), sweep: report)
    }
}
