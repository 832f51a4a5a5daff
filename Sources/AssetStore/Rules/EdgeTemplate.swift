// Collection templates (assetd(8), DATA MODEL, Collection templates): edges an object derives from
// fields of its own value. The built-in template derives `file` edges that own their files, unless
// the collection declares its own template on the field `file`.

import JSON

/// What a template's field refers to.
public enum TemplateTarget: Hashable, Sendable {
    /// Keys of objects in this collection.
    case collection(String)
    /// File paths.
    case file
}

/// One derived edge declaration of a collection.
public struct EdgeTemplate: Hashable, Sendable {
    /// The edge name.
    public var name: String
    /// Where in the value the reference (or array of references) is.
    public var field: JSONPath
    /// What the field refers to.
    public var to: TemplateTarget
    /// The edge's rules.
    public var rules: DeleteRules

    /// A template; `validate` checks it.
    public init(name: String, field: JSONPath, to: TemplateTarget, rules: DeleteRules) {
        self.name = name
        self.field = field
        self.to = to
        self.rules = rules
    }

    /// The built-in template: the field `file` owns its files by reference counting.
    public static let builtInFile = EdgeTemplate(
        name: "file", field: JSONPath("file")!, to: .file, rules: .deleteDestinationIfAllSourcesDeleted)

    /// The templates in force for a collection that declares none.
    static let builtInOnly = [builtInFile]

    /// The templates in force for a collection given its declared ones: the built-in one
    /// unless a declared one uses the field `file` or the name `file`.
    static func effective(_ declared: [EdgeTemplate]) -> [EdgeTemplate] {
        declared.contains(where: { $0.field.components == [.member("file")] || $0.name == builtInFile.name })
            ? declared : declared + [builtInFile]
    }

    /// True if this template would derive `row` (same name, field and kind of destination).
    func declares(_ row: EdgeRow) -> Bool {
        guard UTF8Key.same(name, row.name), let f = row.field, UTF8Key.same(field.text, f) else { return false }
        switch (to, row.destination) {
        case (.file, .file): return true
        case (.collection(let c), .object(let r)): return UTF8Key.same(c, r.collection)
        default: return false
        }
    }

    /// Parses `{name, field, to, rules}`.
    public init(json: JSONValue) throws(StoreError) {
        guard let o = json.objectValue, let name = o["name"]?.stringValue, !name.isEmpty,
            let fieldText = o["field"]?.stringValue, let to = o["to"]?.stringValue, !to.isEmpty
        else {
            throw StoreError(.invalidParams, "a template edge needs name, field and to (strings)")
        }
        guard let field = JSONPath(fieldText) else {
            throw StoreError(.invalidParams, "\"\(fieldText)\" is not a field name or JSON path")
        }
        self.init(
            name: name, field: field, to: to == "file" ? .file : .collection(to),
            rules: try DeleteRules(json: o["rules"] ?? .array([])))
        try validate()
    }

    /// Checks the rules for the kind of destination.
    public func validate() throws(StoreError) {
        try rules.validate(fileDestination: to == .file)
        if case .collection(let c) = to { try ObjectRef(c, "x").validate() }
    }

    /// `{name, field, to, rules}`.
    public var json: JSONValue {
        let target: String
        switch to {
        case .file: target = "file"
        case .collection(let c): target = c
        }
        return .object([
            "name": .string(name), "field": .string(field.text), "to": .string(target), "rules": rules.json,
        ])
    }

    /// The references the field holds in `value`: one string or an array of strings.
    func references(in value: JSONValue) -> [String] {
        switch field.value(in: value) {
        case .string(let s)?: return [s]
        case .array(let items)?: return items.compactMap(\.stringValue)
        default: return []
        }
    }
}
