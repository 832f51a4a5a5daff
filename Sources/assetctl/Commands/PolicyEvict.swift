// `assetctl evict [--bytes SIZE] [--owner O] [--dry-run]` → policy.evict: frees at least
// SIZE, from one owner's objects or everyone's, least recently accessed first.

import ArgumentParser
import AssetClient
import AssetStore

/// `evict`.
struct PolicyEvictCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "evict", abstract: "Evict least recently used objects to free space.")

    @ParentCommand var root: AssetCtl

    @Option(help: ArgumentHelp("Free at least this much (\"512MiB\", \"2GiB\", bytes).", valueName: "size")) var bytes:
        String?
    @Option(help: ArgumentHelp("Only this owner's objects.", valueName: "owner")) var owner: String?
    @Flag(help: "Print what would be deleted and change nothing.") var dryRun = false

    func validate() throws {
        if bytes == nil && owner == nil { throw ValidationError("give --bytes, --owner or both") }
        if let bytes, Units.size(bytes) == nil { throw ValidationError("--bytes: not a size: \(bytes)") }
    }

    func run() throws {
        var p: [String: JSONValue] = ["dry_run": .bool(dryRun)]
        if let bytes { p["bytes"] = .string(bytes) }
        if let owner { p["owner"] = .string(owner) }
        let result = try MaintenanceRun.call(root, "policy.evict", p)
        root.emit(result, Render.plan)
        MaintenanceRun.failIfIncomplete(result)
    }
}
