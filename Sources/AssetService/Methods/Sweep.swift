// sweep {release_restore?} → {unlinked, failed, skipped, deferred, pending, held}: runs due
// unlinks now, retrying failed ones at once for an admin only: each retry takes the write lock,
// and a client calling sweep in a loop must not hold it over and over on rows that keep
// failing. Only `release_restore` (an admin's) ends a restore's hold on the copy's queued
// unlinks: the shipped cron's plain sweep as root must not (assetctl(1), restore).

import AssetStore
import ControlProtocol

extension MethodTable {
    /// sweep's admin-only form.
    @Sendable static func sweepRelease(_ params: JSONValue) -> String? {
        params["release_restore"] == true ? "sweep with release_restore" : nil
    }

    static func sweep(_ p: Params, _ ctx: MethodContext) throws -> MethodOutcome {
        let release = try p.optionalBool("release_restore") ?? false
        if release { try requireAdmin("sweep with release_restore", ctx) }
        let report = try ctx.store.sweep(retryFailed: ctx.caller.isAdmin, releasingRestoreHold: release)
        return MethodOutcome(
            .object([
                "unlinked": .int(Int64(report.unlinked.count)), "failed": .int(Int64(report.failed.count)),
                "skipped": .int(Int64(report.skipped.count)), "deferred": .int(Int64(report.deferred.count)),
                "pending": .int(Int64(report.pending)), "held": .int(Int64(report.held)),
            ]), sweep: report)
    }
}
