// `assetctl expire [--collection C] [--older-than D] [--idle D] [--dry-run]` → policy.expire:
// deletes objects created or last accessed longer ago than D (or by the configured TTLs).

import ArgumentParser
import AssetClient
import AssetStore

/// `expire`.
struct PolicyExpireCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "expire", abstract: "Delete objects older or idler than a duration, or by the configured TTLs.")

    @ParentCommand var root: AssetCtl

    @Option(help: ArgumentHelp("Only this collection.", valueName: "collection")) var collection: String?
    @Option(help: ArgumentHelp("Created longer ago than this (\"30d\").", valueName: "duration")) var olderThan: String?
    @Option(help: ArgumentHelp("Not accessed for this long (\"7d\").", valueName: "duration")) var idle: String?
    @Flag(help: "Print what would be deleted and change nothing.") var dryRun = false

    func validate() throws {
        for (flag, value) in [("--older-than", olderThan), ("--idle", idle)] {
            if let value, Units.duration(value) == nil { throw ValidationError("\(flag): not a duration: \(value)") }
        }
    }

    func run() throws {
        var p: [String: JSONValue] = ["dry_run": .bool(dryRun)]
        if let collection { p["collection"] = .string(collection) }
        if let olderThan { p["older_than"] = .string(olderThan) }
        if let idle { p["idle"] = .string(idle) }
        let result = try MaintenanceRun.call(root, "policy.expire", p)
        root.emit(result, Render.plan)
        MaintenanceRun.failIfIncomplete(result)
    }
}
