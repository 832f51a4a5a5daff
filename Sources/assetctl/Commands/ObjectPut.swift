// `assetctl put COLLECTION KEY [VALUE_JSON | - | --value-file PATH] [--file PATH]… [--owner O]
// [--meta JSON]` → object.put. The value comes from the argument, from stdin with `-`, or from a
// file: a large value does not fit in one argument (Linux caps one at 128 KiB). `--file` adds
// paths (made absolute) to the value's `file` field.

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
    @Argument(
        help: ArgumentHelp("The value as JSON (default {}), or - to read it from stdin.", valueName: "value-json"))
    var value: String?

    @Option(help: ArgumentHelp("Read the value's JSON from this file.", valueName: "path")) var valueFile: String?

    @Option(
        name: .customLong("file"), help: ArgumentHelp("Add a file path to the value's file field.", valueName: "path"))
    var files: [String] = []

    @Option(help: "The owner.") var owner: String?

    @Option(help: ArgumentHelp("Metadata as JSON.", valueName: "json")) var meta: String?

    func validate() throws {
        if value != nil && valueFile != nil { throw ValidationError("give the value or --value-file, not both") }
    }

    func run() throws {
        let cwd = Environment.workingDirectory
        // Read before parsing, so a file that cannot be read is exit 1, not a usage error.
        var text = value
        var what = "VALUE_JSON"
        if value == "-" {
            text = try Console.readStandardInput()
            what = "the value on standard input"
        } else if let valueFile {
            text = try Console.readFile(CLIParams.absolutePath(valueFile, cwd: cwd))
            what = "the value in \(valueFile)"
        }
        let params = try Render.usage { () throws(CLIParamError) -> JSONValue in
            let parsed = try text.map { v throws(CLIParamError) in try CLIParams.parseJSON(v, what: what) }
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
