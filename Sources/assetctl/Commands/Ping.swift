// `assetctl ping` → ping: is the daemon there, and which version and commit is it at.

import ArgumentParser
import AssetClient
import AssetctlText

/// `ping`.
struct PingCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ping", abstract: "Check that assetd answers; show its version and last commit.")

    @ParentCommand var root: AssetCtl

    func run() throws {
        root.emit(try root.call("ping")) { Formatting.listing($0) }
    }
}
