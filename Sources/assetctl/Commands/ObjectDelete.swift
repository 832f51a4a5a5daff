// `assetctl rm COLLECTION KEY` → object.delete: prints the commit, every object deleted (the
// one asked for, then the cascade) and every file queued for unlinking, or as many as the
// daemon's reply holds, and then the totals.

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
    /// line per file queued; transact's result has the same members. A reply cut to fit
    /// control.max_reply_bytes ends with `truncated`, the totals of both lists.
    static func render(_ r: JSONValue) -> String {
        var out = Render.commit(.object(["commit": r["commit"] ?? .null]))
        for d in r["deleted"]?.arrayValue ?? [] { out += "deleted \(Formatting.cell(d))\n" }
        for p in r["unlinks_queued"]?.arrayValue ?? [] { out += "queued \(Formatting.cell(p))\n" }
        if r["truncated"] == true {
            let deleted = r["deleted_total"].map(Formatting.cell) ?? "?"
            let queued = r["unlinks_queued_total"].map(Formatting.cell) ?? "?"
            out += "truncated: \(deleted) deleted and \(queued) queued in all\n"
        }
        return out
    }
}
