// `assetctl edge rm NAME SRC_COLLECTION SRC_KEY (DST_COLLECTION DST_KEY | --file PATH)
// [--reason edge|sourceDeleted|destinationDeleted]` → edge.remove.

import ArgumentParser
import AssetClient
import AssetctlText
import JSON

/// `edge rm`.
struct EdgeRemoveCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rm", abstract: "Remove an edge; with a reason other than edge, its rules fire.")

    /// Why the edge goes, as edge.remove takes it.
    enum Reason: String, ExpressibleByArgument, CaseIterable {
        case edge, sourceDeleted, destinationDeleted
    }

    @ParentCommand var root: AssetCtl

    @OptionGroup var edge: EdgeArguments

    @Option(help: "Why the edge goes.") var reason: Reason?

    func run() throws {
        var params: [String: JSONValue] = [
            "name": .string(edge.name), "source": edge.source, "destination": edge.destination,
        ]
        if let reason { params["reason"] = .string(reason.rawValue) }
        try root.show("edge.remove", .object(params)) { r in
            var out = Render.commit(.object(["commit": r["commit"] ?? .null]))
            if let removed = r["removed"] { out += "removed \(Formatting.cell(removed))\n" }
            return out
        }
    }
}
