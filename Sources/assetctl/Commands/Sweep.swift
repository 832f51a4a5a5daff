// `assetctl sweep` → sweep: runs due unlinks now and shows unlinked, failed and pending.

import ArgumentParser
import AssetClient
import AssetctlText

/// `sweep`.
struct SweepCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "sweep", abstract: "Run due unlinks now.")

    @ParentCommand var root: AssetCtl

    func run() throws {
        try root.show("sweep") { Formatting.listing($0) }
    }
}
