// Edges as callers see them: a named, directed link from an object to an object or a file,
// carrying delete rules. Manual edges come from edge.add; derived ones from templates.

import JSON

/// The far end of an edge: an object or a file path (normalised).
public enum EdgeEnd: Hashable, Sendable, CustomStringConvertible {
    /// An object.
    case object(ObjectRef)
    /// A file, by normalised absolute path.
    case file(String)

    public var description: String {
        switch self {
        case .object(let r): return r.description
        case .file(let p): return p
        }
    }

    /// `{"collection","key"}` or `{"file"}`.
    public var json: JSONValue {
        switch self {
        case .object(let r): return r.json
        case .file(let p): return .object(["file": .string(p)])
        }
    }
}

/// Where an edge comes from.
public enum EdgeKind: Hashable, Sendable {
    /// Added with edge.add; stays until removed or an end goes.
    case manual
    /// Declared by the source's collection template, from this field of its value.
    case derived(field: String)
}

/// An edge as stored.
public struct Edge: Hashable, Sendable, CustomStringConvertible {
    /// The edge's name.
    public var name: String
    /// The source object.
    public var source: ObjectRef
    /// The destination.
    public var destination: EdgeEnd
    /// Its rules.
    public var rules: DeleteRules
    /// Manual or derived.
    public var kind: EdgeKind

    /// An edge.
    public init(name: String, source: ObjectRef, destination: EdgeEnd, rules: DeleteRules, kind: EdgeKind = .manual) {
        self.name = name
        self.source = source
        self.destination = destination
        self.rules = rules
        self.kind = kind
    }

    public var description: String { "\(name): \(source) -> \(destination) [\(rules)]" }

    /// The longest edge name, in UTF-8 bytes: as long as a key may be. Every edge.find
    /// reply and edge event carries the name, and one edge must fit a reply.
    public static let maximumNameLength = ObjectRef.maximumLength

    /// Throws `invalid_params` unless `name` is non-empty, without NUL (SQLite and C end
    /// text there) and at most `maximumNameLength` bytes.
    public static func validate(name: String) throws(StoreError) {
        guard !name.isEmpty, !name.utf8.contains(0) else {
            throw StoreError(.invalidParams, "an edge needs a name without NUL bytes")
        }
        guard name.utf8.count <= maximumNameLength else {
            throw StoreError(.invalidParams, "an edge name is longer than \(maximumNameLength) bytes")
        }
    }

    /// The edge as JSON, as the protocol shows it.
    public var json: JSONValue {
        var o: [String: JSONValue] = [
            "name": .string(name), "source": source.json, "destination": destination.json, "rules": rules.json,
        ]
        switch kind {
        case .manual: o["kind"] = "manual"
        case .derived(let field):
            o["kind"] = "derived"
            o["field"] = .string(field)
        }
        return .object(o)
    }
}

/// Why an edge was removed, as edge.remove takes it and events report it.
public enum EdgeRemovalReason: String, Sendable, CaseIterable {
    /// Just remove it; nothing fires.
    case edge
    /// As if its source went: the source-side rules fire.
    case sourceDeleted
    /// As if its destination went: the destination-side rules fire.
    case destinationDeleted
}

/// Which edges a find or count matches; nil parts match anything.
public struct EdgeFilter: Sendable, Hashable {
    /// The edge name.
    public var name: String?
    /// The source object.
    public var source: ObjectRef?
    /// The destination object or file.
    public var destination: EdgeEnd?

    /// A filter; with no parts it matches every edge.
    public init(name: String? = nil, source: ObjectRef? = nil, destination: EdgeEnd? = nil) {
        self.name = name
        self.source = source
        self.destination = destination
    }
}
