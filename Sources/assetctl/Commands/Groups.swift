// The command groups named for a method prefix: `edge …`, `template …`, `index …`, `lease …`. Their
// subcommands live in the files named for their methods.

import ArgumentParser

/// `edge add|rm|ls|count`.
struct EdgeGroup: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "edge", abstract: "Add, remove, list and count edges.",
        subcommands: [EdgeAddCommand.self, EdgeRemoveCommand.self, EdgeFindCommand.self, EdgeCountCommand.self])
}

/// `template set|get`.
struct TemplateGroup: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "template", abstract: "Set or show a collection's edge templates.",
        subcommands: [TemplateSetCommand.self, TemplateGetCommand.self])
}

/// `index define|ls`.
struct IndexGroup: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "index", abstract: "Define or list secondary indexes.",
        subcommands: [IndexDefineCommand.self, IndexListCommand.self])
}

/// `lease acquire|ls`.
struct LeaseGroup: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "lease", abstract: "Hold or list leases that protect in-flight work.",
        subcommands: [LeaseAcquireCommand.self, LeaseListCommand.self])
}
