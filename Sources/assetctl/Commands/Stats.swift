// `assetctl stats [--prometheus]` → stats: counts, bytes per owner, unlinks, commits, uptime
// and latency as `name  value` lines (nested names dotted), or as Prometheus metrics for
// node_exporter's textfile collector.

import ArgumentParser
import AssetClient
import AssetctlText

/// `stats`.
struct StatsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "stats", abstract: "Show the daemon's counters.")

    @ParentCommand var root: AssetCtl

    @Flag(help: "Print the Prometheus text exposition format (node_exporter textfile collector).")
    var prometheus = false

    func run() throws {
        let stats = try root.call("stats")
        if prometheus {
            Console.out(Prometheus.exposition(stats: stats))
            return
        }
        root.emit(stats) { Formatting.statsListing($0) }
    }
}
