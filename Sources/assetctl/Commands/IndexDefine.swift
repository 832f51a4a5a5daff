// `assetctl index define DEFINITION_JSON` → index.define: the fields of an `[[indexes]]`
// entry, `{name, version, collections?, columns:[{name, type, path}…]}`.

import ArgumentParser
import AssetClient
import AssetctlText
import JSON

/// `index define`.
struct IndexDefineCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "define", abstract: "Define or change a user index (rebuilt when its version changes).",
        discussion:
            #"Example: assetctl index define '{"name":"dims","version":"1","columns":[{"name":"width","type":"integer","path":"$.width"}]}'"#
    )

    @ParentCommand var root: AssetCtl

    @Argument(help: ArgumentHelp("The definition as a JSON object.", valueName: "definition-json")) var definition:
        String

    func run() throws {
        let params = try Render.usage { () throws(CLIParamError) in
            try CLIParams.parseJSON(definition, what: "DEFINITION_JSON")
        }
        guard let fields = params.objectValue else { throw ValidationError("DEFINITION_JSON must be a JSON object") }
        // A changed index is rebuilt over every object: show how far on a terminal.
        root.emit(try MaintenanceRun.call(root, "index.define", fields, skipWhenBusy: false), Render.commit)
    }
}
