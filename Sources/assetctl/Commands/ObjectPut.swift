// `assetctl put COLLECTION KEY [VALUE_JSON] [--file PATH]… [--owner O] [--meta JSON]` →
// object.put. `--file` adds paths (made absolute) to the value's `file` field.

import ArgumentParser
import AssetClient
import AssetctlText
import JSON

/// `put`.
struct ObjectPutCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "put", abstract: "Store an object (replacing any with the same key).")

    @ParentCommand var root: AssetCtl

    @OptionGroup var object: ObjectArguments
    @Argument(help: ArgumentHelp("The value as JSON (default {}).", valueName: "value-json")) var value: String?

    @Option(
        name: .customLong("file"), help: ArgumentHelp("Add a file path to the value's file field.", valueName: "path"))
    var files: [String] = []

    @Option(help: "The owner.") var owner: String?

    @Option(help: ArgumentHelp("Metadata as JSON.", valueName: "json")) var meta: String?

    func run() throws {
        let cwd = Environment.workingDirectory
        let params = try Render.usage { () throws(CLIParamError) -> JSONValue in
            let parsed = try value.map { v throws(CLIParamError) in try CLIParams.parseJSON(v, what: "VALUE_JSON") }
            let body = try CLIParams.addFiles(
                files.map { CLIParams.absolutePath($0, cwd: cwd) }, to: parsed ?? .object([:]))
            var p: [String: JSONValue] = [
                "collection": .string(object.collection), "key": .string(object.key), "value": body,
            ]
            if let meta { p["metadata"] = try CLIParams.parseJSON(meta, what: "--meta") }
            if let owner { p["owner"] = .string(owner) }
            return .object(p)
        }
        try root.show("object.put", params, Render.commit)
    }
}
