// policy.evict {bytes?, owner?, dry_run?} → the plan: frees at least `bytes` (a size string
// or a number), from one owner's objects or everyone's, least recently accessed first.

import AssetStore
import ControlProtocol

extension MethodTable {
    static func policyEvict(_ p: Params, _ ctx: MethodContext) throws -> MethodOutcome {
        let dryRun = try p.optionalBool("dry_run") ?? false
        let bytes = try p.optionalSize("bytes")
        let owner = try p.optionalString("owner")
        guard bytes != nil || owner != nil else { throw RPCError.invalidParams("bytes or owner is required") }
        if !dryRun { try requireAdmin("policy.evict without dry_run", ctx) }
        return try planned {
            try ctx.store.evict(
                bytes: bytes, owner: owner, dryRun: dryRun, dryRunBatches: dryRunBatches(ctx),
                progress: policyProgress(ctx))
        }
    }
}
