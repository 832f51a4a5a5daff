// `assetctl get COLLECTION KEY [--touch]` → object.get. The object pretty-printed, its times
// (and its files' times) in UTC as file, query and pending print them, raw with --json; a
// missing object is a message on stderr and exit 1.

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
        root.emit(result) { $0.isNull ? "" : Formatting.pretty(ObjectGetCommand.withTimes($0)) }
        if result.isNull { throw CLIFailure("no object \(object.collection)/\(object.key)") }
    }

    /// `object` with its own times and its files' as UTC strings; value and metadata untouched
    /// (a field of theirs named `created` is the user's, not a time of ours).
    static func withTimes(_ object: JSONValue) -> JSONValue {
        guard case .object(var o) = object else { return object }
        for name in ["created", "modified", "accessed"] {
            if let t = o[name]?.doubleValue { o[name] = .string(Formatting.timestamp(t)) }
        }
        if let files = o["files"]?.arrayValue {
            o["files"] = .array(
                files.map { file in
                    guard case .object(var f) = file else { return file }
                    for name in ["mtime", "first_seen"] {
                        if let t = f[name]?.doubleValue { f[name] = .string(Formatting.timestamp(t)) }
                    }
                    return .object(f)
                })
        }
        return .object(o)
    }
}
