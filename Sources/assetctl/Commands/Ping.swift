// `assetctl ping` → ping: is the daemon there, and which version, protocol and commit is it at.

import ArgumentParser
import AssetClient
import AssetctlText

/// `ping`.
struct PingCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ping", abstract: "Check that assetd answers; show its version, protocol version and last commit.")

    @ParentCommand var root: AssetCtl

    func run() throws {
        try root.show("ping") { Formatting.listing($0) }
    }
}
