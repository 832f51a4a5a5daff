// `assetctl backup PATH` → backup: an online, consistent copy of the database in one SQLite
// file marked as a copy, which assetd starts on once restored. The daemon writes it, so
// PATH must be writable by it.

import ArgumentParser
import AssetClient
import AssetctlText
import JSON

/// `backup`.
struct BackupCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "backup", abstract: "Copy the database, consistently and online, to a file.")

    @ParentCommand var root: AssetCtl

    @Argument(help: "Where to write the copy (made absolute).") var path: String

    func run() throws {
        let absolute = CLIParams.absolutePath(path, cwd: Environment.workingDirectory)
        root.emit(try MaintenanceRun.call(root, "backup", ["path": .string(absolute)])) { Formatting.listing($0) }
    }
}
