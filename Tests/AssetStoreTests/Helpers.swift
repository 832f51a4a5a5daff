// Small builders shared by the relationship tests.

import AssetStore
import AssetStoreTestSupport

/// A template edge from `field` to objects of `to` (or "file").
func templateEdge(_ name: String, field: String, to: String, _ rules: DeleteRules) -> EdgeTemplate {
    EdgeTemplate(name: name, field: JSONPath(field)!, to: to == "file" ? .file : .collection(to), rules: rules)
}

extension Fixture {
    func setTemplate(_ collection: String, _ edges: EdgeTemplate...) throws {
        try store.write { try $0.setTemplate(collection: collection, edges: edges) }
    }

    func addEdge(_ name: String, _ source: ObjectRef, _ destination: EdgeEnd, _ rules: DeleteRules) throws {
        try store.write { try $0.addEdge(name: name, source: source, destination: destination, rules: rules) }
    }

    func value(_ r: ObjectRef) throws -> JSONValue? { try store.read { try $0.get(r)?.value } }
}

extension CommitReport {
    var deletedRefs: [ObjectRef] { deleted.map(\.ref) }
}

func keys(_ ks: String...) -> JSONValue { .array(ks.map(JSONValue.string)) }
