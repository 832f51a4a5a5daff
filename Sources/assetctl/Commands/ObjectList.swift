// `assetctl ls COLLECTION [--after K] [--limit N] [--all]` → object.list: keys one per line.
// With --all it pages until `next` is null; without, a further page is announced on stderr, as
// is a collection with no keys (stdout stays a plain list of keys for scripts).

import ArgumentParser
import AssetClient
import AssetctlText
import JSON

/// `ls`.
struct ObjectListCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ls", abstract: "List a collection's keys in order.")

    @ParentCommand var root: AssetCtl

    @Argument(help: "The collection.") var collection: String

    @Option(help: ArgumentHelp("Start after this key.", valueName: "key")) var after: String?

    @Option(help: ArgumentHelp("Keys per page (default 1000).", valueName: "n")) var limit: Int?

    @Flag(help: "Fetch every page, not just the first.") var all = false

    func validate() throws {
        if let limit, limit < 1 { throw ValidationError("--limit must be at least 1") }
    }

    func run() throws {
        let backend = try root.backend()
        var cursor = after
        var collected: [JSONValue] = []
        while true {
            var params: [String: JSONValue] = ["collection": .string(collection)]
            if let cursor { params["after"] = .string(cursor) }
            if let limit { params["limit"] = .int(Int64(limit)) }
            let page = try backend.call("object.list", .object(params))
            let keys = page["keys"]?.arrayValue ?? []
            let next = page["next"]?.stringValue
            if !all {
                root.emit(page) { _ in keys.map { Formatting.cell($0) + "\n" }.joined() }
                if !root.json, let next { Console.error("more keys after \(next) (--after or --all)") }
                if !root.json, keys.isEmpty { noKeys() }
                return
            }
            if root.json {
                collected += keys
            } else {
                Console.out(keys.map { Formatting.cell($0) + "\n" }.joined())
                if keys.isEmpty, cursor == after { noKeys() }
            }
            // Stop at the end, and on a cursor that does not move (never loop forever).
            guard let next, next != cursor, !keys.isEmpty else { break }
            cursor = next
        }
        if root.json { Console.out(JSONValue.object(["keys": .array(collected), "next": .null]).serialized() + "\n") }
    }

    /// Says on stderr that there was nothing to list.
    private func noKeys() {
        Console.error("no keys in \(collection)" + (after.map { " after \($0)" } ?? ""))
    }
}
