// `assetctl get COLLECTION KEY [--touch]` → object.get. The object pretty-printed; a missing
// object is a message on stderr and exit 1.

import ArgumentParser
import AssetClient
import AssetctlText
import JSON

/// `get`.
struct ObjectGetCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "get", abstract: "Show an object: value, metadata, owner, files, timestamps.")

    @ParentCommand var root: AssetCtl

    @OptionGroup var object: ObjectArguments

    @Flag(help: "Also count this as an access (moves `accessed`, which drives LRU).") var touch = false

    func run() throws {
        var params: [String: JSONValue] = ["collection": .string(object.collection), "key": .string(object.key)]
        if touch { params["touch"] = true }
        let result = try root.call("object.get", .object(params))
        root.emit(result) { $0.isNull ? "" : Formatting.pretty($0) }
        if result.isNull { throw CLIFailure("no object \(object.collection)/\(object.key)") }
    }
}
