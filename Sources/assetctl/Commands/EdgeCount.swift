// `assetctl edge count [filters of edge ls]` → edge.count: the number alone.

import ArgumentParser
import AssetClient
import AssetctlText
import JSON

/// `edge count`.
struct EdgeCountCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "count", abstract: "Count the edges that match every filter given.")

    @ParentCommand var root: AssetCtl

    @OptionGroup var filter: EdgeFilterOptions

    func run() throws {
        try root.show("edge.count", filter.params) { r in
            Formatting.cell(r["count"] ?? r) + "\n"
        }
    }
}
