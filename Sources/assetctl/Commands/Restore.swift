// `assetctl --db PATH restore`: makes a backup copy a live database again by removing the
// mark `backup` left in it. A marked copy never sweeps, runs policies or deletes orphans, and
// assetd refuses to start on it: its queue may list files the live database holds again.

import ArgumentParser
import AssetctlText
import JSON

/// `restore`.
struct RestoreCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "restore",
        abstract: "Make the backup copy opened with --db a live database again (assetd stopped).")

    @ParentCommand var root: AssetCtl

    func run() throws {
        guard root.db != nil else {
            throw CLIFailure(
                "restore works on a database file: assetctl --db PATH restore, with assetd stopped",
                status: ExitStatus.usage)
        }
        let mark = try root.backend().restore()
        let result: JSONValue = .object(["restored": .bool(mark != nil), "mark": mark.map(JSONValue.string) ?? .null])
        root.emit(result) { _ in
            mark.map { "restored: no longer a backup copy (\($0))\n" } ?? "not a backup copy: nothing to do\n"
        }
    }
}
