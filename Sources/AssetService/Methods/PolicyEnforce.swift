// policy.enforce {dry_run?} → the plan `{objects, files, bytes, dry_run}`, plus `commit` on a real
// run and `configured: false` without [policy]: applies the configured policies now (assetd(8),
// CONTROL PROTOCOL, Methods). Real runs are for admins (they delete other users' objects); a dry
// run changes nothing and is open to everyone.

import AssetStore
import ControlProtocol

extension MethodTable {
    /// The admin-only form of policy run `method`: a real run (without `dry_run: true`).
    static func realPolicyRun(_ method: String) -> @Sendable (JSONValue) -> String? {
        { params in params["dry_run"] != true ? "\(method) without dry_run" : nil }
    }

    static func policyEnforce(_ p: Params, _ ctx: MethodContext) throws -> MethodOutcome {
        let dryRun = try p.optionalBool("dry_run") ?? false
        if !dryRun { try requireAdmin("policy.enforce without dry_run", ctx) }
        var outcome = try planned {
            try ctx.store.enforce(dryRun: dryRun, dryRunBatches: dryRunBatches(ctx), progress: policyProgress(ctx))
        }
        // Without [policy] a run deletes nothing, which "0 objects" alone does not explain.
        if ctx.store.policy == nil, case .object(var o) = outcome.result {
            o["configured"] = false
            outcome.result = .object(o)
        }
        return outcome
    }

    /// The plan of `run`. A real run that failed after some batches committed answers with
    /// what those did, `complete: false` and the `error` that stopped it, and their events
    /// go out: what was deleted is never left unreported.
    static func planned(_ run: () throws -> PolicyPlan) throws -> MethodOutcome {
        do {
            return planned(try run())
        } catch let failure as PolicyRunFailure {
            var outcome = planned(failure.completed)
            var o = outcome.result.objectValue ?? [:]
            if case .failure(let e) = capture({ () throws -> Void in throw failure.underlying }) { o["error"] = e.json }
            o["complete"] = false
            outcome.result = .object(o)
            return outcome
        }
    }

    /// The plan as the reply shows it, with the last commit and every batch's events.
    static func planned(_ plan: PolicyPlan) -> MethodOutcome {
        var o = plan.json.objectValue ?? [:]
        if !plan.dryRun { o["commit"] = plan.commits.last.map { .int($0.commit) } ?? .null }
        var outcome = MethodOutcome(.object(o), commit: plan.commits.first)
        outcome.moreCommits = Array(plan.commits.dropFirst())
        outcome.sweep = plan.sweep
        return outcome
    }

    /// A dry run holds the writer, and every client's writes, for its whole plan: one by a
    /// client that is not an admin plans one batch (as long as a real run holds it at a time).
    static func dryRunBatches(_ ctx: MethodContext) -> Int? {
        ctx.caller.isAdmin ? nil : 1
    }

    /// The engine's policy progress as `{phase, done, bytes}` notifications.
    static func policyProgress(_ ctx: MethodContext) -> (@Sendable (PolicyProgress) -> Void)? {
        guard let report = ctx.progress else { return nil }
        return { p in
            report(["phase": .string(p.phase), "done": .int(Int64(p.deleted)), "total": .null, "bytes": .int(p.bytes)])
        }
    }
}
