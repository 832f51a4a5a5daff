// `assetctl template get COLLECTION` → template.get: the templates as a table NAME FIELD TO
// RULES (other members as further columns).

import ArgumentParser
import AssetClient
import AssetctlText
import JSON

/// `template get`.
struct TemplateGetCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "get", abstract: "Show a collection's edge templates.")

    @ParentCommand var root: AssetCtl

    @Argument(help: "The collection.") var collection: String

    func run() throws {
        try root.show("template.get", ["collection": .string(collection)]) { r in
            let edges = r["edges"]?.arrayValue ?? []
            if edges.isEmpty { return "no templates for \(collection)\n" }
            let columns = Formatting.columns(of: edges, leading: ["name", "field", "to", "rules"])
            return Formatting.objectTable(edges, columns: columns, headers: columns.map { $0.uppercased() })
        }
    }
}
