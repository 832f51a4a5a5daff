// `assetctl lease ls` → lease.list: live leases as LEASE EXPIRES HOLDER OBJECTS FILES, in the
// order they were taken, times in UTC; none says so. Follows every page (lease.list pages by
// lease id), so the list is whole.

import ArgumentParser
import AssetClient
import AssetctlText
import JSON

/// `lease ls`.
struct LeaseListCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "ls", abstract: "List live leases.")

    @ParentCommand var root: AssetCtl

    func run() throws {
        let backend = try root.backend()
        var collected = [JSONValue]()
        var cursor: String?
        while true {
            let page = try backend.call("lease.list", cursor.map { ["after": .string($0)] } ?? [:])
            let leases = page["leases"]?.arrayValue ?? []
            collected += leases
            // Stop at the end, and on a cursor that does not move (never loop forever).
            guard let next = page["next"]?.stringValue, next != cursor, !leases.isEmpty else { break }
            cursor = next
        }
        // Every page in one list: as before paging, {leases} alone.
        root.emit(.object(["leases": .array(collected)])) { r in
            let leases = r["leases"]?.arrayValue ?? []
            if leases.isEmpty { return "no live leases\n" }
            return Formatting.objectTable(
                leases, columns: ["lease", "expires", "holder", "objects", "files"],
                headers: ["LEASE", "EXPIRES", "HOLDER", "OBJECTS", "FILES"]
            ) { name, value in
                switch name {
                case "expires": return value.doubleValue.map(Formatting.timestamp) ?? "-"
                case "objects":
                    return (value.arrayValue ?? []).map {
                        "\(Formatting.cell($0["collection"] ?? .null))/\(Formatting.cell($0["key"] ?? .null))"
                    }.joined(separator: ",")
                case "files": return (value.arrayValue ?? []).map(Formatting.cell).joined(separator: ",")
                default: return Formatting.cell(value)
                }
            }
        }
    }
}
