// `assetctl pending [--limit N]` → pending: queued unlinks as a table PATH QUEUED ATTEMPTS
// DEFERRED NEXT LAST_ERROR, times in UTC; an empty queue says so.

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
            let rows = r["pending"]?.arrayValue ?? []
            if rows.isEmpty { return "no unlinks pending\n" }
            // DEFERRED says why a file waits without a failed attempt (`leased`): without it a
            // leased file looks like one nobody has tried.
            return Formatting.objectTable(
                rows, columns: ["path", "queued_at", "attempts", "deferred", "next_attempt", "last_error"],
                headers: ["PATH", "QUEUED", "ATTEMPTS", "DEFERRED", "NEXT", "LAST_ERROR"]
            ) { name, value in
                // Parked (Store.parkedUntil): retried when assetd next starts, not at a time.
                if name == "next_attempt", let t = value.doubleValue, t >= 9.0e15 { return "parked" }
                if name == "queued_at" || name == "next_attempt", let t = value.doubleValue {
                    return Formatting.timestamp(t)
                }
                return Formatting.cell(value)
            }
        }
    }
}
