// policy.expire {collection?, older_than?, idle?, dry_run?} → the plan: deletes objects
// created longer than `older_than` ago or accessed longer than `idle` ago (durations), or
// with neither, applies the configured [[policy.ttl]] rules.

import AssetStore
import ControlProtocol

extension MethodTable {
    static func policyExpire(_ p: Params, _ ctx: MethodContext) throws -> MethodOutcome {
        let dryRun = try p.optionalBool("dry_run") ?? false
        let collection = try p.optionalString("collection")
        let olderThan = try p.optionalDuration("older_than")
        let idle = try p.optionalDuration("idle")
        if !dryRun { try requireAdmin("policy.expire without dry_run", ctx) }
        return try planned {
            try ctx.store.expire(
                collection: collection, olderThan: olderThan, idle: idle, dryRun: dryRun,
                dryRunBatches: dryRunBatches(ctx), progress: policyProgress(ctx))
        }
    }
}
