// `assetctl forget PATH…` → pending.forget: drops queued unlinks without unlinking, for rows
// that can never succeed (the files stay on disk). Prints `forgot PATH` per dropped row; a
// path with no queued row is named on stderr and the exit status is 1.

import ArgumentParser
import AssetClient
import AssetctlText
import AssetStore

/// `forget`.
struct ForgetCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "forget", abstract: "Drop queued unlinks without unlinking: the files stay (admins).")

    @ParentCommand var root: AssetCtl

    @Argument(help: ArgumentHelp("Paths with a queued unlink, as `pending` lists them.", valueName: "path"))
    var paths: [String]

    func run() throws {
        let cwd = Environment.workingDirectory
        // Normalised here as the daemon does, so its answer can be matched to what was asked.
        let asked = paths.map { p in
            let absolute = CLIParams.absolutePath(p, cwd: cwd)
            return (try? ManagedRoots.normalise(absolute)) ?? absolute
        }
        let result = try root.call("pending.forget", ["paths": .array(asked.map(JSONValue.string))])
        root.emit(result) { r in
            (r["forgotten"]?.arrayValue ?? []).map { "forgot \(Formatting.cell($0))\n" }.joined()
        }
        // As bytes: canonically equal paths in other bytes are other files.
        let forgotten = Set(
            (result["forgotten"]?.arrayValue ?? []).compactMap { $0.stringValue.map { Array($0.utf8) } })
        let missing = asked.filter { !forgotten.contains(Array($0.utf8)) }
        guard missing.isEmpty else {
            throw CLIFailure(missing.map { "no queued unlink: \($0)" }.joined(separator: "\n"))
        }
    }
}
