// `assetctl enforce [--dry-run]` → policy.enforce: applies the configured policies now (a
// real run is for admins; a dry run prints the exact plan and changes nothing).

import ArgumentParser
import AssetClient
import JSON

/// `enforce`.
struct PolicyEnforceCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "enforce", abstract: "Apply the configured lifecycle policies now.")

    @ParentCommand var root: AssetCtl

    @Flag(help: "Print what would be deleted and change nothing.") var dryRun = false

    func run() throws {
        let result = try MaintenanceRun.call(root, "policy.enforce", ["dry_run": .bool(dryRun)])
        root.emit(result, Render.plan)
        MaintenanceRun.failIfIncomplete(result)
    }
}
