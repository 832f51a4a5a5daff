// `assetctl template set COLLECTION EDGES_JSON` → template.set: replaces a collection's edge
// templates (`[{name, field, to, rules}…]`; `[]` removes them).

import ArgumentParser
import AssetClient
import AssetctlText
import JSON

/// `template set`.
struct TemplateSetCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "set", abstract: "Replace a collection's edge templates.",
        discussion:
            #"Example: assetctl template set media '[{"name":"thumb","field":"thumb","to":"thumbs","rules":["deleteDestinationIfSourceDeleted"]}]'"#
    )

    @ParentCommand var root: AssetCtl

    @Argument(help: "The collection.") var collection: String

    @Argument(help: ArgumentHelp("The templates as a JSON array.", valueName: "edges-json")) var edges: String

    func run() throws {
        let parsed = try Render.usage { () throws(CLIParamError) -> JSONValue in
            let json = try CLIParams.parseJSON(edges, what: "EDGES_JSON")
            // `{"edges": […]}` as template get prints it is accepted too.
            return json["edges"] ?? json
        }
        guard parsed.arrayValue != nil else { throw ValidationError("EDGES_JSON must be a JSON array") }
        let params: JSONValue = ["collection": .string(collection), "edges": parsed]
        try root.show("template.set", params, Render.commit)
    }
}
