// `assetctl lease ls` → lease.list: live leases as LEASE EXPIRES HOLDER OBJECTS FILES, soonest
// to lapse first, times in UTC; none says so.

import ArgumentParser
import AssetClient
import AssetctlText
import JSON

/// `lease ls`.
struct LeaseListCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "ls", abstract: "List live leases.")

    @ParentCommand var root: AssetCtl

    func run() throws {
        try root.show("lease.list") { r in
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
