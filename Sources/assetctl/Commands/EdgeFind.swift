// `assetctl edge ls [--name N] [--source C K] [--dest C K | --file PATH]` → edge.find, as a
// table NAME SOURCE DESTINATION RULES KIND. Follows every page (edge.find pages by edge id), so
// the list is whole however long; an edge alone larger than the daemon's reply limit is named on
// stderr (exit 1) and the rest listed. The filter options are shared with edge count.

import ArgumentParser
import AssetClient
import AssetctlText
import JSON

/// `edge ls`.
struct EdgeFindCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ls", abstract: "List the edges that match every filter given.")

    @ParentCommand var root: AssetCtl

    @OptionGroup var filter: EdgeFilterOptions

    func run() throws {
        let backend = try root.backend()
        var params = filter.params.objectValue ?? [:]
        // The largest page: pages end at the reply limit anyway, and each page of a filter
        // read through an index scans every match after `after`.
        params["limit"] = 100_000
        var collected = [JSONValue]()
        var skipped = [Int64]()
        while true {
            let page: JSONValue
            switch try backend.answer("edge.find", .object(params)) {
            case .success(let answer): page = answer
            case .failure(let e):
                // An edge alone past the reply limit: the refusal names it, and the list goes
                // on past it (forward only: never loop forever).
                guard e.stableCode == "reply_too_large", let past = e.data?["detail"]?["after"]?.intValue,
                    past > params["after"]?.intValue ?? 0
                else { throw Backend.failure(e, target: backend.target) }
                skipped.append(past)
                params["after"] = .int(past)
                continue
            }
            let edges = page["edges"]?.arrayValue ?? []
            collected += edges
            // Stop at the end, and on a cursor that does not move (never loop forever).
            guard let next = page["next"]?.intValue, page["next"] != params["after"], !edges.isEmpty else { break }
            params["after"] = .int(next)
        }
        // Every page in one list: as before paging, {edges} alone.
        root.emit(.object(["edges": .array(collected)])) { r in
            let edges = r["edges"]?.arrayValue ?? []
            return edges.isEmpty ? "no edges\n" : Formatting.edgeTable(edges)
        }
        guard skipped.isEmpty else {
            throw CLIFailure(
                skipped.map { "edge \($0) is larger than the reply limit (control.max_reply_bytes): not listed" }
                    .joined(separator: "\n"))
        }
    }
}

/// Filters of edge.find and edge.count: any of name, source and destination.
struct EdgeFilterOptions: ParsableArguments {
    @Option(help: "The edge name.") var name: String?

    @Option(
        parsing: .upToNextOption,
        help: ArgumentHelp("The source object.", valueName: "collection key"))
    var source: [String] = []
    @Option(help: ArgumentHelp("The source object's collection (with --source-key).", valueName: "collection"))
    var sourceCollection: String?
    @Option(help: ArgumentHelp("The source object's key (with --source-collection).", valueName: "key"))
    var sourceKey: String?

    @Option(
        parsing: .upToNextOption,
        help: ArgumentHelp("The destination object.", valueName: "collection key"))
    var dest: [String] = []
    @Option(help: ArgumentHelp("The destination object's collection (with --dest-key).", valueName: "collection"))
    var destCollection: String?
    @Option(help: ArgumentHelp("The destination object's key (with --dest-collection).", valueName: "key"))
    var destKey: String?

    @Option(help: ArgumentHelp("The destination file.", valueName: "path")) var file: String?

    func validate() throws {
        _ = try end("--source", source, sourceCollection, sourceKey)
        let d = try end("--dest", dest, destCollection, destKey)
        if d != nil, file != nil { throw ValidationError("give a destination object or --file, not both") }
    }

    /// The params object.
    var params: JSONValue {
        var p: [String: JSONValue] = [:]
        if let name { p["name"] = .string(name) }
        // validate() accepted these, so they cannot throw here.
        if let s = try? end("--source", source, sourceCollection, sourceKey) { p["source"] = s }
        if let d = try? end("--dest", dest, destCollection, destKey) { p["destination"] = d }
        if let file {
            p["destination"] = ["file": .string(CLIParams.absolutePath(file, cwd: Environment.workingDirectory))]
        }
        return .object(p)
    }

    private func end(_ option: String, _ pair: [String], _ collection: String?, _ key: String?) throws -> JSONValue? {
        if !pair.isEmpty {
            guard pair.count == 2 else { throw ValidationError("\(option) takes two values: COLLECTION KEY") }
            guard collection == nil, key == nil else {
                throw ValidationError(
                    "give \(option) COLLECTION KEY or \(option)-collection and \(option)-key, not both")
            }
            return CLIParams.ref(pair[0], pair[1])
        }
        switch (collection, key) {
        case (nil, nil): return nil
        case (let c?, let k?): return CLIParams.ref(c, k)
        default: throw ValidationError("\(option)-collection and \(option)-key go together")
        }
    }
}
