// `assetctl shutdown` → shutdown (admin only): the daemon finishes in-flight requests and exits.

import ArgumentParser
import AssetClient

/// `shutdown`.
struct ShutdownCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "shutdown", abstract: "Stop the daemon (admins only).")

    @ParentCommand var root: AssetCtl

    func run() throws {
        try root.show("shutdown") { _ in "assetd is shutting down\n" }
    }
}
