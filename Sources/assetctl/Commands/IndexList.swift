// `assetctl index ls` → index.list: a table NAME VERSION COLLECTIONS COLUMNS, columns as
// `name:type`, `*` for an index over all collections.

import ArgumentParser
import AssetClient
import AssetctlText
import JSON

/// `index ls`.
struct IndexListCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "ls", abstract: "List the indexes.")

    @ParentCommand var root: AssetCtl

    func run() throws {
        try root.show("index.list") { r in
            Formatting.objectTable(
                r["indexes"]?.arrayValue ?? [], columns: ["name", "version", "collections", "columns"],
                headers: ["NAME", "VERSION", "COLLECTIONS", "COLUMNS"]
            ) { name, value in
                switch name {
                case "collections" where value.isNull: return "*"
                case "columns":
                    guard let columns = value.arrayValue else { return Formatting.cell(value) }
                    return columns.map { c in
                        guard let n = c["name"]?.stringValue else { return Formatting.cell(c) }
                        return c["type"]?.stringValue.map { "\(n):\($0)" } ?? n
                    }.joined(separator: ",")
                default: return Formatting.cell(value)
                }
            }
        }
    }
}
