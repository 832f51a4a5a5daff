// `assetctl pending [--limit N]` → pending: queued unlinks as a table PATH QUEUED ATTEMPTS
// LAST_ERROR, times in UTC.

import ArgumentParser
import AssetClient
import AssetctlText
import JSON

/// `pending`.
struct PendingCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pending", abstract: "List queued unlinks with their attempts and last error.")

    @ParentCommand var root: AssetCtl

    @Option(help: ArgumentHelp("At most this many (default 100).", valueName: "n")) var limit: Int?

    func validate() throws {
        if let limit, limit < 1 { throw ValidationError("--limit must be at least 1") }
    }

    func run() throws {
        var params: [String: JSONValue] = [:]
        if let limit { params["limit"] = .int(Int64(limit)) }
        try root.show("pending", .object(params)) { r in
            Formatting.objectTable(
                r["pending"]?.arrayValue ?? [], columns: ["path", "queued_at", "attempts", "last_error"],
                headers: ["PATH", "QUEUED", "ATTEMPTS", "LAST_ERROR"]
            ) { name, value in
                if name == "queued_at", let t = value.doubleValue { return Formatting.timestamp(t) }
                return Formatting.cell(value)
            }
        }
    }
}
