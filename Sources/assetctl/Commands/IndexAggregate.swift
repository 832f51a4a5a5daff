// `assetctl aggregate [--index I] [--group-by COLUMN]… FUNCTION [CLAUSE [PARAM…]]` →
// index.aggregate: the value alone, or with --group-by a table, group columns first.

import ArgumentParser
import AssetClient
import AssetctlText
import JSON

/// `aggregate`.
struct IndexAggregateCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "aggregate", abstract: "Compute an aggregate over an index.",
        discussion: "Example: assetctl aggregate --group-by owner 'sum(size)'")

    @ParentCommand var root: AssetCtl

    @Option(help: "The index (default: default).") var index: String?

    @Option(help: ArgumentHelp("Group by this column (repeatable).", valueName: "column")) var groupBy: [String] = []

    @Argument(help: ArgumentHelp("The aggregate, e.g. sum(size) or count(*).", valueName: "function"))
    var function: String

    @Argument(
        parsing: .allUnrecognized,
        help: ArgumentHelp("A SQL suffix with ? for each PARAM, then the PARAMs.", valueName: "clause param"))
    var rest: [String] = []

    func run() throws {
        var p: [String: JSONValue] = ["function": .string(function)]
        if let index { p["index"] = .string(index) }
        if let clause = rest.first { p["where"] = .string(clause) }
        if rest.count > 1 {
            p["params"] = try Render.usage { () throws(CLIParamError) in
                .array(try rest.dropFirst().map(CLIParams.parseParam))
            }
        }
        if !groupBy.isEmpty { p["group_by"] = .array(groupBy.map(JSONValue.string)) }
        try root.show("index.aggregate", .object(p)) { r in
            if let rows = r["rows"]?.arrayValue {
                if rows.isEmpty { return "no matches\n" }
                return Formatting.objectTable(rows, columns: Formatting.columns(of: rows, leading: groupBy))
            }
            return Formatting.cell(r["value"] ?? r) + "\n"
        }
    }
}
