// verify {repair?, relearn: ROOT?, orphans?, delete_orphans?, force?, since_backup?} → the report
// `{problems, clean, …}`: checks the store against its files and its own indexes (assetd(8)).
// Looking is open to everyone; repair, relearn, orphans and delete_orphans are for admins, and
// delete_orphans refuses a root without assetd's CACHEDIR.TAG (untagged_root) unless force.

import AssetStore
import ControlProtocol

extension MethodTable {
    /// verify's admin-only forms: those that change the store or the disk.
    @Sendable static func verifyChanges(_ params: JSONValue) -> String? {
        if let r = params["relearn"], r != .null, r != false { return "verify with relearn" }
        if params["repair"] == true { return "verify with repair" }
        if params["delete_orphans"] == true { return "verify with delete_orphans" }
        if params["orphans"] == true { return "verify with orphans" }
        return nil
    }

    static func verify(_ p: Params, _ ctx: MethodContext) throws -> MethodOutcome {
        var options = VerifyOptions()
        options.repair = try p.optionalBool("repair") ?? false
        options.relearn = try p.optionalString("relearn")
        options.deleteOrphans = try p.optionalBool("delete_orphans") ?? false
        options.orphans = (try p.optionalBool("orphans") ?? false) || options.deleteOrphans
        options.force = try p.optionalBool("force") ?? false
        options.sinceBackup = try p.optionalBool("since_backup") ?? false
        // Relearn adopts a file no put named (assetd(8), "The unlink queue"): an admin's deliberate act.
        if options.relearn != nil { try requireAdmin("verify with relearn", ctx) }
        if options.repair { try requireAdmin("verify with repair", ctx) }
        if options.deleteOrphans { try requireAdmin("verify with delete_orphans", ctx) }
        // The walk reads every folder under the roots as root: its list would show anyone
        // the names, sizes and times of files in folders they cannot read.
        if options.orphans { try requireAdmin("verify with orphans", ctx) }
        var progress: (@Sendable (VerifyProgress) -> Void)?
        if let report = ctx.progress {
            progress = { v in
                report([
                    "phase": .string(v.phase), "done": .int(Int64(v.done)),
                    "total": v.total.map { .int(Int64($0)) } ?? .null,
                ])
            }
        }
        let report = try ctx.store.verify(options, progress: progress)
        return MethodOutcome(report.json, commit: report.commit)
    }
}
