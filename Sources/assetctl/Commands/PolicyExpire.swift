// `assetctl expire [--collection C] [--older-than D] [--idle D] [--dry-run]` → policy.expire:
// deletes objects older (since created) or idler (since accessed) than a duration ("30d").

import ArgumentParser
import AssetClient
import AssetStore

/// `expire`.
struct PolicyExpireCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "expire", abstract: "Delete objects past an age or idle time.")

    @ParentCommand var root: AssetCtl

    @Option(help: "Only this collection.") var collection: String?

    @Option(help: ArgumentHelp("Created longer ago than this (e.g. 180d).", valueName: "duration")) var olderThan: String?

    @Option(help: ArgumentHelp("Not accessed for this long (e.g. 30d).", valueName: "duration")) var idle: String?

    @Flag(help: "Show what would be deleted; change nothing.") var dryRun = false

    func run() throws {
        var params: [String: JSONValue] = [:]
        if let collection { params["collection"] = .string(collection) }
        if let olderThan { params["older_than"] = .string(olderThan) }
        if let idle { params["idle"] = .string(idle) }
        if dryRun { params["dry_run"] = true }
        root.emit(try root.call("policy.expire", .object(params)), PolicyPlan.render)
    }
}
