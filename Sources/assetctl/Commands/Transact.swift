// `assetctl transact OPS_JSON` (or `-` to read it from stdin) → transact: all the operations
// in one transaction, all or nothing. OPS_JSON is `[{method, params}…]` or `{"ops": […]}`.
// Prints the commit, what it deleted and queued, and each op's result that is not empty.

import ArgumentParser
import AssetClient
import AssetctlText
import JSON

/// `transact`.
struct TransactCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "transact", abstract: "Run object and edge operations as one transaction.",
        discussion:
            #"Example: assetctl transact '[{"method":"object.put","params":{"collection":"a","key":"1","value":{}}}]'"#)

    @ParentCommand var root: AssetCtl

    @Argument(help: ArgumentHelp("The operations as JSON, or - for stdin.", valueName: "ops-json")) var ops: String

    func run() throws {
        let text = ops == "-" ? try Console.readStandardInput() : ops
        let parsed = try Render.usage { () throws(CLIParamError) in try CLIParams.parseJSON(text, what: "OPS_JSON") }
        let list = parsed["ops"] ?? parsed
        guard list.arrayValue != nil else { throw ValidationError("OPS_JSON must be an array of {method, params}") }
        try root.show("transact", ["ops": list]) { r in
            // As rm prints it (what the transaction deleted and queued), then each op's own
            // result that says anything, such as edge.remove's `removed`.
            var out = ObjectDeleteCommand.render(r)
            for (i, result) in (r["results"]?.arrayValue ?? []).enumerated()
            where result != .object([:]) && result != .null {
                out += "ops[\(i)]: \(result.serialized())\n"
            }
            return out
        }
    }
}
