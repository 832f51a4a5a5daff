// `assetctl file PATH` → file.get: the registry row as `name  value` lines (times in UTC),
// then the edges that keep the file alive ("why is this file still here?").

import ArgumentParser
import AssetClient
import AssetctlText
import JSON

/// `file`.
struct FileGetCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "file", abstract: "Show a registered file and the edges that keep it.")

    @ParentCommand var root: AssetCtl

    @Argument(help: "The file path (relative paths are made absolute).") var path: String

    func run() throws {
        let absolute = CLIParams.absolutePath(path, cwd: Environment.workingDirectory)
        let result = try root.call("file.get", ["path": .string(absolute)])
        root.emit(result) { r in
            guard case .object(var members) = r else { return r.isNull ? "" : Formatting.listing(r) }
            let edges = members.removeValue(forKey: "edges")?.arrayValue
            // `{file: {path, size, …}, retained_by}`: the row's fields at the top.
            if case .object(let row)? = members.removeValue(forKey: "file") {
                for (name, value) in row { members[name] = value }
            }
            for name in ["mtime", "first_seen"] {
                if let t = members[name]?.doubleValue { members[name] = .string(Formatting.timestamp(t)) }
            }
            var out = Formatting.listing(.object(members))
            if let edges {
                out += edges.isEmpty ? "\nno edges\n" : "\n" + Formatting.edgeTable(edges)
            }
            return out
        }
        if result.isNull { throw CLIFailure("no file \(absolute) in the registry") }
    }
}
