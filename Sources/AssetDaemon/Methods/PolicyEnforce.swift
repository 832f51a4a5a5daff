// policy.enforce {dry_run?} → the plan `{objects, files, bytes, dry_run}` plus `commit` on a
// real run: applies the configured policies now (SPEC §9). Real runs are for admins (they
// delete other users' objects); a dry run changes nothing and is open to everyone.

import AssetStore
import ControlProtocol

extension MethodTable {
    static func policyEnforce(_ p: Params, _ ctx: MethodContext) throws -> MethodOutcome {
        let dryRun = try p.optionalBool("dry_run") ?? false
        if !dryRun { try requireAdmin("policy.enforce without dry_run", ctx) }
        return planned(try ctx.store.enforce(dryRun: dryRun, progress: policyProgress(ctx)))
    }

    /// The plan as the reply shows it, with the last commit and every batch's events.
    static func planned(_ plan: PolicyPlan) -> MethodOutcome {
        var o = plan.json.objectValue ?? [:]
        if !plan.dryRun { o["commit"] = plan.commits.last.map { .int($0.commit) } ?? .null }
        var outcome = MethodOutcome(.object(o), commit: plan.commits.first)
        outcome.moreCommits = Array(plan.commits.dropFirst())
        return outcome
    }

    /// The engine's policy progress as `{phase, done, bytes}` notifications.
    static func policyProgress(_ ctx: MethodContext) -> (@Sendable (PolicyProgress) -> Void)? {
        guard let report = ctx.progress else { return nil }
        return { p in report(["phase": .string(p.phase), "done": .int(Int64(p.deleted)), "total": .null, "bytes": .int(p.bytes)]) }
    }
}
