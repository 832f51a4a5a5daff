// `assetctl stats` → stats: counts, bytes per owner, unlinks, commits, uptime and latency as
// `name  value` lines (nested names dotted).

import ArgumentParser
import AssetClient

/// `stats`.
struct StatsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "stats", abstract: "Show the daemon's counters.")

    @ParentCommand var root: AssetCtl

    func run() throws {
        root.emit(try root.call("stats")) { Formatting.listing($0) }
    }
}
