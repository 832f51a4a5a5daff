// `assetctl edge add NAME SRC_COLLECTION SRC_KEY (DST_COLLECTION DST_KEY | --file PATH)
// --rules R1,R2` → edge.add.

import ArgumentParser
import AssetClient
import AssetctlText
import JSON

/// `edge add`.
struct EdgeAddCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "add", abstract: "Add an edge from an object to an object or a file.")

    @ParentCommand var root: AssetCtl

    @OptionGroup var edge: EdgeArguments

    /// Required, as the man page has it: adding an existing edge replaces its rules, so a
    /// forgotten --rules would silently strip them.
    @Option(
        help: ArgumentHelp("Delete rules, comma-separated (repeatable; required; '' for none).", valueName: "r1,r2"))
    var rules: [String]

    func run() throws {
        let params: JSONValue = [
            "name": .string(edge.name), "source": edge.source, "destination": edge.destination,
            "rules": .array(CLIParams.ruleNames(rules).map(JSONValue.string)),
        ]
        try root.show("edge.add", params, Render.commit)
    }
}

/// `NAME SRC_COLLECTION SRC_KEY (DST_COLLECTION DST_KEY | --file PATH)`, shared by add and rm.
struct EdgeArguments: ParsableArguments {
    @Argument(help: "The edge name.") var name: String
    @Argument(help: "The source object's collection.") var sourceCollection: String
    @Argument(help: "The source object's key.") var sourceKey: String
    @Argument(help: ArgumentHelp("The destination object's collection and key.", valueName: "dst-collection dst-key"))
    var destinationWords: [String] = []

    @Option(help: ArgumentHelp("The destination is this file.", valueName: "path")) var file: String?

    func validate() throws {
        switch (destinationWords.count, file) {
        case (2, nil), (0, _?): break
        case (0, nil): throw ValidationError("give a destination: DST_COLLECTION DST_KEY or --file PATH")
        case (_, _?): throw ValidationError("give DST_COLLECTION DST_KEY or --file PATH, not both")
        default: throw ValidationError("a destination object is DST_COLLECTION DST_KEY: two words")
        }
    }

    /// `{collection, key}`.
    var source: JSONValue { CLIParams.ref(sourceCollection, sourceKey) }

    /// `{collection, key}` or `{file}` (made absolute).
    var destination: JSONValue {
        if let file { return ["file": .string(CLIParams.absolutePath(file, cwd: Environment.workingDirectory))] }
        return CLIParams.ref(destinationWords[0], destinationWords[1])  // validate() made it two words
    }
}
