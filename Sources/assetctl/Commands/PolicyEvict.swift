// `assetctl evict [--bytes SIZE] [--owner O] [--dry-run]` → policy.evict: frees at least SIZE
// bytes (`512MiB` or a number), from one owner or all, least recently accessed first.

import ArgumentParser
import AssetClient
import AssetStore

/// `evict`.
struct PolicyEvictCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "evict", abstract: "Evict objects to free space, least recently accessed first.")

    @ParentCommand var root: AssetCtl

    @Option(help: ArgumentHelp("Free at least this much (e.g. 5GiB).", valueName: "size")) var bytes: String?

    @Option(help: "Only this owner's objects.") var owner: String?

    @Flag(help: "Show what would be deleted; change nothing.") var dryRun = false

    func run() throws {
        var params: [String: JSONValue] = [:]
        if let bytes {
            guard let n = CLIParams.parseSize(bytes) else {
                throw ValidationError("--bytes \(bytes) is not a size such as 5GiB or 1000000")
            }
            params["bytes"] = .int(n)
        }
        if let owner { params["owner"] = .string(owner) }
        if dryRun { params["dry_run"] = true }
        root.emit(try root.call("policy.evict", .object(params)), PolicyPlan.render)
    }
}
