// Typed access to a request's params: each getter names the param in its error, so a client
// learns exactly what was wrong (-32602).

import AssetStore
import ControlProtocol

/// A request's params object.
public struct Params: Sendable {
    /// The object, or its members in text order (a repeated name the last counts), as a
    /// request parsed from text brings them: a point read looks up its two or three names
    /// without building a dictionary.
    private enum Form: Sendable {
        case object([String: JSONValue])
        case members([JSONMember])
    }
    private let form: Form

    /// The raw object.
    public var object: [String: JSONValue] {
        switch form {
        case .object(let o): o
        case .members(let m): JSONValue(members: m).objectValue ?? [:]
        }
    }

    public init(_ json: JSONValue) {
        form = .object(json.objectValue ?? [:])
    }

    /// The params of `request`, read from its members when it has them. Borrowed: an init
    /// takes its arguments owned, so a point read copied its request and destroyed the copy.
    public init(_ request: borrowing RPCRequest) {
        form = request.paramMembers.map(Form.members) ?? .object(request.params.objectValue ?? [:])
    }

    /// The raw value of `name`, if present and not null.
    public func value(_ name: String) -> JSONValue? {
        guard let v = member(name), !v.isNull else { return nil }
        return v
    }

    /// The value of `name` as sent, null included; nil if absent. Read from the members when
    /// the request brought them, without building the object.
    public func member(_ name: String) -> JSONValue? {
        switch form {
        case .object(let o): o[name]
        case .members(let m): m.last { $0.name == name }?.value
        }
    }

    /// A required string.
    public func string(_ name: String) throws(RPCError) -> String {
        guard let v = value(name) else { throw .invalidParams("\(name) is required") }
        guard let s = v.stringValue else { throw .invalidParams("\(name) must be a string") }
        return s
    }

    /// An optional string.
    public func optionalString(_ name: String) throws(RPCError) -> String? {
        guard let v = value(name) else { return nil }
        guard let s = v.stringValue else { throw .invalidParams("\(name) must be a string") }
        return s
    }

    /// An optional integer within `range`.
    public func optionalInt(_ name: String, in range: ClosedRange<Int64> = 0...Int64.max) throws(RPCError) -> Int64? {
        guard let v = value(name) else { return nil }
        guard case .int(let i) = v, range.contains(i) else {
            throw .invalidParams("\(name) must be an integer in \(range.lowerBound)...\(range.upperBound)")
        }
        return i
    }

    /// An optional boolean.
    public func optionalBool(_ name: String) throws(RPCError) -> Bool? {
        guard let v = value(name) else { return nil }
        guard case .bool(let b) = v else { throw .invalidParams("\(name) must be true or false") }
        return b
    }

    /// An optional array of strings.
    public func optionalStrings(_ name: String) throws(RPCError) -> [String]? {
        guard let v = value(name) else { return nil }
        guard let items = v.arrayValue, items.allSatisfy({ $0.stringValue != nil }) else {
            throw .invalidParams("\(name) must be an array of strings")
        }
        return items.map { $0.stringValue! }  // checked just above
    }

    /// `collection` and `key` of this object.
    public func ref() throws(RPCError) -> ObjectRef {
        ObjectRef(try string("collection"), try string("key"))
    }

    /// `{collection, key}` under `name`.
    public func ref(_ name: String) throws(RPCError) -> ObjectRef {
        guard let v = value(name) else { throw .invalidParams("\(name) is required") }
        return try Params(v).refObject(name)
    }

    private func refObject(_ name: String) throws(RPCError) -> ObjectRef {
        guard let c = value("collection")?.stringValue, let k = value("key")?.stringValue else {
            throw .invalidParams("\(name) must be {collection, key}")
        }
        return ObjectRef(c, k)
    }

    /// `{collection, key}` or `{file}` under `name`.
    public func end(_ name: String) throws(RPCError) -> EdgeEnd {
        guard let v = value(name) else { throw .invalidParams("\(name) is required") }
        if let file = v["file"] {
            guard let path = file.stringValue else { throw .invalidParams("\(name).file must be a path string") }
            return .file(path)
        }
        return .object(try Params(v).refObject(name))
    }

    /// An optional `{collection, key}` or `{file}`.
    public func optionalEnd(_ name: String) throws(RPCError) -> EdgeEnd? {
        value(name) == nil ? nil : try end(name)
    }
}
