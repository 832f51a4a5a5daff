// Secondary index definitions (assetd(8), DATA MODEL, Secondary indexes; assetd.toml(5),
// [[indexes]]): the built-in `default` index and user indexes of typed columns extracted from JSON
// paths, limited to some collections, versioned.

import JSON

/// The type of a user index column.
public enum IndexColumnType: String, Sendable, Hashable, CaseIterable {
    case integer, real, text, boolean
}

/// One column of a user index.
public struct IndexColumn: Sendable, Hashable {
    /// The column name, as queries use it.
    public var name: String
    /// Its type; values of another JSON type are stored as NULL.
    public var type: IndexColumnType
    /// Where in the object's value the column's value is.
    public var path: JSONPath

    /// A column.
    public init(name: String, type: IndexColumnType, path: JSONPath) {
        self.name = name
        self.type = type
        self.path = path
    }
}

/// A user index: rebuilt when its version, collections or columns change.
public struct IndexDefinition: Sendable, Hashable {
    /// The index name; its SQL tables and indexes are qualified by it.
    public var name: String
    /// YapDatabase's versionTag: change it and the index is rebuilt.
    public var version: String
    /// Allowed collections; nil means all.
    public var collections: [String]?
    /// The columns.
    public var columns: [IndexColumn]

    /// The name of the built-in index.
    public static let defaultName = "default"
    /// The built-in index's columns, in table order.
    public static let defaultColumns = [
        "collection", "key", "owner", "size", "files", "created", "modified", "accessed",
    ]
    static let reservedColumns: Set<String> = ["rowid", "oid", "_rowid_", "object_id", "collection", "key"]

    /// A definition; `validate` checks names.
    public init(name: String, version: String, collections: [String]? = nil, columns: [IndexColumn]) {
        self.name = name
        self.version = version
        self.collections = collections
        self.columns = columns
    }

    /// Parses the fields of an `[[indexes]]` entry.
    public init(json: JSONValue) throws(StoreError) {
        guard let o = json.objectValue, let name = o["name"]?.stringValue else {
            throw StoreError(.invalidParams, "an index needs a name")
        }
        let version: String
        switch o["version"] {
        case .string(let s)?: version = s
        case .int(let i)?: version = String(i)
        case nil, .null?: version = ""
        default: throw StoreError(.invalidParams, "version must be a string")
        }
        var collections: [String]?
        if let c = o["collections"], !c.isNull {
            guard let items = c.arrayValue?.compactMap(\.stringValue), items.count == c.arrayValue?.count else {
                throw StoreError(.invalidParams, "collections must be an array of strings")
            }
            collections = items
        }
        guard let cols = o["columns"]?.arrayValue else { throw StoreError(.invalidParams, "an index needs columns") }
        var columns = [IndexColumn]()
        for c in cols {
            guard let co = c.objectValue, let cname = co["name"]?.stringValue, let tname = co["type"]?.stringValue,
                let pname = co["path"]?.stringValue
            else { throw StoreError(.invalidParams, "a column needs name, type and path") }
            guard let type = IndexColumnType(rawValue: tname) else {
                throw StoreError(.invalidParams, "column type \"\(tname)\" is not integer, real, text or boolean")
            }
            guard let path = JSONPath(pname) else {
                throw StoreError(.invalidParams, "\"\(pname)\" is not a JSON path")
            }
            columns.append(IndexColumn(name: cname, type: type, path: path))
        }
        self.init(name: name, version: version, collections: collections, columns: columns)
        try validate()
    }

    /// The definition as JSON (also its stored form: a change of this text rebuilds).
    public var json: JSONValue {
        var o: [String: JSONValue] = [
            "name": .string(name), "version": .string(version),
            "columns": .array(
                columns.map {
                    .object([
                        "name": .string($0.name), "type": .string($0.type.rawValue), "path": .string($0.path.text),
                    ])
                }),
        ]
        if let collections { o["collections"] = .array(collections.map(JSONValue.string)) }
        return .object(o)
    }

    /// Names must be plain identifiers; column names unique and not reserved.
    public func validate() throws(StoreError) {
        // SQL names ignore case: lower case only, and no "__" (the separator in SQL names).
        guard Self.isIdentifier(name), name == name.lowercased(), !name.contains("__") else {
            throw StoreError(
                .invalidParams, "index name \"\(name)\" must be lower-case letters, digits and single _ (at most 64)")
        }
        guard name != Self.defaultName else { throw StoreError(.invalidParams, "\"default\" is the built-in index") }
        guard !columns.isEmpty else { throw StoreError(.invalidParams, "an index needs at least one column") }
        var seen = Set<String>()
        for c in columns {
            guard Self.isIdentifier(c.name) else {
                throw StoreError(.invalidParams, "column name \"\(c.name)\" must be letters, digits and _")
            }
            guard !Self.reservedColumns.contains(c.name.lowercased()) else {
                throw StoreError(.invalidParams, "column name \"\(c.name)\" is reserved")
            }
            guard seen.insert(c.name.lowercased()).inserted else {
                throw StoreError(.invalidParams, "column \"\(c.name)\" appears twice")
            }
        }
    }

    static func isIdentifier(_ s: String) -> Bool {
        guard let first = s.unicodeScalars.first, s.utf8.count <= 64 else { return false }
        let alpha: (Unicode.Scalar) -> Bool = { ($0 >= "a" && $0 <= "z") || ($0 >= "A" && $0 <= "Z") || $0 == "_" }
        return alpha(first) && s.unicodeScalars.allSatisfy { alpha($0) || ($0 >= "0" && $0 <= "9") }
    }
}

/// Progress of an index rebuild, reported to the caller that opened the store.
public struct IndexRebuildProgress: Sendable {
    /// The index being rebuilt.
    public var index: String
    /// Objects (or `unit`) looked at so far.
    public var done: Int
    /// Objects (or `unit`) to look at.
    public var total: Int
    /// What `done` and `total` count: "objects", or "files" for an index on the registry.
    public var unit = "objects"
}
