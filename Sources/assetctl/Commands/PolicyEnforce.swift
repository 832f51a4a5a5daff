// `assetctl enforce [--dry-run]` → policy.enforce: applies the configured policies now (SPEC
// §9). With --dry-run, the exact plan and nothing changed. Shared plan rendering is here.

import ArgumentParser
import AssetClient
import AssetStore

/// `enforce`.
struct PolicyEnforceCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "enforce", abstract: "Apply the configured lifecycle policies now.")

    @ParentCommand var root: AssetCtl

    @Flag(help: "Show what would be deleted; change nothing.") var dryRun = false

    func run() throws {
        let params: JSONValue = dryRun ? ["dry_run": true] : [:]
        root.emit(try root.call("policy.enforce", params), PolicyPlan.render)
    }
}

/// The result of policy.enforce, policy.evict and policy.expire.
enum PolicyPlan {
    /// `commit N` if any, the objects as a table COLLECTION KEY REASON BYTES, `unlink PATH`
    /// per file, and `total N bytes`; any other shape as a listing.
    static func render(_ r: JSONValue) -> String {
        guard let objects = r["objects"]?.arrayValue else { return Render.commit(r) }
        var out = r["commit"].map { "commit \(Formatting.cell($0))\n" } ?? ""
        out += Formatting.objectTable(
            objects, columns: ["collection", "key", "reason", "bytes"], headers: ["COLLECTION", "KEY", "REASON", "BYTES"])
        for f in r["files"]?.arrayValue ?? [] { out += "unlink \(Formatting.cell(f))\n" }
        if let bytes = r["bytes"] { out += "total \(Formatting.cell(bytes)) bytes\n" }
        return out
    }
}
