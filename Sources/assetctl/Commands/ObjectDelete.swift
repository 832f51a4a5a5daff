// `assetctl rm COLLECTION KEY` → object.delete: prints the commit, every object deleted (the
// one asked for, then the cascade) and every file queued for unlinking.

import ArgumentParser
import AssetClient
import AssetctlText
import JSON

/// `rm`.
struct ObjectDeleteCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rm", abstract: "Delete an object; its rules decide what else goes.")

    @ParentCommand var root: AssetCtl

    @OptionGroup var object: ObjectArguments

    func run() throws {
        try root.show("object.delete", object.ref, ObjectDeleteCommand.render)
    }

    /// `commit N`, then a `deleted collection/key` line per object deleted and a `queued path`
    /// line per file queued; transact's result has the same members.
    static func render(_ r: JSONValue) -> String {
        var out = Render.commit(.object(["commit": r["commit"] ?? .null]))
        for d in r["deleted"]?.arrayValue ?? [] { out += "deleted \(Formatting.cell(d))\n" }
        for p in r["unlinks_queued"]?.arrayValue ?? [] { out += "queued \(Formatting.cell(p))\n" }
        return out
    }
}
