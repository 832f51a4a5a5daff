// `assetctl query [--index I] [--include keys|rows|objects] CLAUSE [PARAM…]` → index.query,
// as a table headed by column names. Each PARAM is JSON if it parses, else a string.

import ArgumentParser
import AssetClient
import AssetctlText
import JSON

/// `query`.
struct IndexQueryCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "query", abstract: "Find objects through a secondary index.",
        discussion: "Example: assetctl query 'WHERE owner = ? ORDER BY size DESC LIMIT 100' alice")

    /// How much of each match to return.
    enum Include: String, ExpressibleByArgument, CaseIterable {
        case keys, rows, objects
    }

    @ParentCommand var root: AssetCtl

    @Option(help: "The index (default: default).") var index: String?

    @Option(help: "What each row carries.") var include: Include?

    @Argument(help: ArgumentHelp("The SQL suffix, with ? for each PARAM.", valueName: "clause")) var clause: String

    @Argument(
        parsing: .allUnrecognized, help: ArgumentHelp("Values for the ?s (JSON, else a string).", valueName: "param"))
    var params: [String] = []

    func run() throws {
        var p: [String: JSONValue] = ["where": .string(clause)]
        if let index { p["index"] = .string(index) }
        if let include { p["include"] = .string(include.rawValue) }
        if !params.isEmpty {
            p["params"] = try Render.usage { () throws(CLIParamError) in .array(try params.map(CLIParams.parseParam)) }
        }
        let builtIn = index == nil || index == "default"
        try root.show("index.query", .object(p)) { r in
            let rows = r["rows"]?.arrayValue ?? []
            if rows.isEmpty { return "no matches\n" }
            var columns = Formatting.columns(of: rows, leading: IndexQueryCommand.leadingColumns)
            for last in ["value", "metadata"] where columns.contains(last) {
                columns.removeAll { $0 == last }
                columns.append(last)
            }
            return Formatting.objectTable(rows, columns: columns) { name, value in
                if builtIn, IndexQueryCommand.timeColumns.contains(name), let t = value.doubleValue {
                    return Formatting.timestamp(t)
                }
                // A value is shown as the JSON it is: the shorthand for edge ends would print
                // {"file": path} as a bare path, like a string value.
                // Only the object's own: an index may have a column of that name.
                if include == .objects, IndexQueryCommand.jsonColumns.contains(name), value != .null {
                    return value.serialized()
                }
                return Formatting.cell(value)
            }
        }
    }

    /// The built-in index's columns, in table order.
    static let leadingColumns = ["collection", "key", "owner", "size", "files", "created", "modified", "accessed"]
    /// The object's own JSON, with `--include objects`.
    static let jsonColumns: Set<String> = ["value", "metadata"]
    /// Built-in columns holding Unix seconds, shown as UTC times.
    static let timeColumns: Set<String> = ["created", "modified", "accessed"]
}
