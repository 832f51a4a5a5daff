// `assetctl verify [--repair [--relearn ROOT]] [--orphans] [--delete-orphans [--force]
// [--since-backup]]` → verify: checks the store against its files and indexes. Exit 1 if problems remain (found and not repaired), as
// assetctl(1) says; repair and orphan deletion are for admins.

import ArgumentParser
import AssetClient
import AssetctlText
import JSON

/// `verify`.
struct VerifyCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify", abstract: "Check the store against its files and indexes; repair with --repair.")

    @ParentCommand var root: AssetCtl

    @Flag(help: "Repair what can be: file edges of missing files go, indexes are rebuilt.") var repair = false
    @Option(
        help: ArgumentHelp(
            "With --repair: below this root, adopt the file now at a registered path if its size and mtime match.",
            valueName: "root"))
    var relearn: String?
    @Flag(help: "Also report files under the roots that nothing registers.") var orphans = false
    @Flag(help: "Delete those orphans (implies --orphans); only in roots with assetd's CACHEDIR.TAG.")
    var deleteOrphans = false
    @Flag(help: "With --delete-orphans: delete them also in roots without assetd's CACHEDIR.TAG.") var force = false
    @Flag(help: "With --delete-orphans after a restore: delete also files changed since the backup.")
    var sinceBackup = false

    func validate() throws {
        if force && !deleteOrphans { throw ValidationError("--force goes with --delete-orphans") }
        if sinceBackup && !deleteOrphans { throw ValidationError("--since-backup goes with --delete-orphans") }
        if relearn != nil && !repair { throw ValidationError("--relearn goes with --repair") }
    }

    func run() throws {
        let result = try MaintenanceRun.call(
            root, "verify",
            [
                "repair": .bool(repair), "relearn": relearn.map(JSONValue.string) ?? .null,
                "orphans": .bool(orphans || deleteOrphans),
                "delete_orphans": .bool(deleteOrphans),
                "force": .bool(force), "since_backup": .bool(sinceBackup),
            ])
        root.emit(result) { r in
            let table = Formatting.objectTable(
                r["problems"]?.arrayValue ?? [], columns: ["kind", "repaired", "message"],
                headers: ["KIND", "REPAIRED", "PROBLEM"])
            let found = r["found"]?.intValue ?? 0, repaired = r["repaired"]?.intValue ?? 0
            if found == 0 { return "clean\n" }
            return table + "\(Render.count(Int(found), "problem")) found, \(repaired) repaired"
                + (r["clean"] == false ? "; problems remain\n" : "\n")
        }
        if result["clean"] == false { throw CLIFailure("verify found problems that remain") }
    }
}
