// `assetctl vacuum` → vacuum: rebuilds the database file to give free pages back (admins).

import ArgumentParser
import AssetClient
import AssetctlText
import JSON

/// `vacuum`.
struct VacuumCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "vacuum", abstract: "Rebuild the database file to give free space back.")

    @ParentCommand var root: AssetCtl

    func run() throws {
        root.emit(try MaintenanceRun.call(root, "vacuum", [:], showProgress: false)) { Formatting.listing($0) }
    }
}
