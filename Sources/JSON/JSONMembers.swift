// An object read as its members in text order, not as a dictionary: a caller that reads a
// few known members (a JSON-RPC request's envelope, a point read's params) spares hashing
// every name. Read this way or as a JSONValue, the same text gives the same values.

/// A member of a parsed object: its name, its value and where the value's text lies.
public struct JSONMember: Sendable {
    /// The member's name.
    public let name: String
    /// Its value; `.null` when the value is an object read flat (`fields`).
    public let value: JSONValue
    /// The byte range of the value's text in the parsed document.
    public let range: Range<Int>
    /// The members of the value, an object, in text order, when it was read flat
    /// (`parseMembers(_:flattening:)`); nil otherwise.
    public let fields: [JSONMember]?

    /// The value, an object read flat made into one.
    public var fullValue: JSONValue { fields.map(JSONValue.init(members:)) ?? value }
}

/// An object's members in text order, as `JSONValue.parseMembers` read them.
public struct JSONMembers: Sendable {
    /// The members, a repeated name as often as it appears.
    public let members: [JSONMember]
    /// False if some number anywhere in the document is one a value does not keep
    /// (`firstInexactNumber` finds it).
    public let numbersExact: Bool
}

extension JSONValue {
    /// The object of `members`; of a repeated name, the last counts (as when parsed).
    public init(members: [JSONMember]) {
        var object = [String: JSONValue](minimumCapacity: members.count)
        for m in members { object[m.name] = m.fullValue }
        self = .object(object)
    }

    /// Parses one JSON document that should be an object, returning its members in text order
    /// (a repeated name appears twice; the last is the one `parse` would keep) with where each
    /// value's text lies, or nil when the document is valid JSON but not an object. A member
    /// named `flattening` whose value is an object comes with that object's members in
    /// `fields` (one level: their values are parsed as usual).
    public static func parseMembers(
        _ bytes: UnsafeBufferPointer<UInt8>, flattening: String? = nil
    ) throws(JSONParseError) -> JSONMembers? {
        var parser = JSONParser(bytes: bytes)
        parser.skipSpace()
        guard parser.index < bytes.count, bytes[parser.index] == UInt8(ascii: "{") else {
            _ = try parse(bytes)  // the same errors as parse, or a valid non-object
            return nil
        }
        // A request's envelope has four members: grown once, not three times.
        let members = try parser.readMembers(depth: 0, capacity: 4, flattening: flattening)
        parser.skipSpace()
        guard parser.index == bytes.count else { throw parser.error("unexpected text after the value") }
        return JSONMembers(members: members, numbersExact: !parser.sawInexactNumber)
    }
}

extension JSONParser {
    /// Reads the object whose `{` is at `index` as its members, as `forEachMember` reads it.
    mutating func readMembers(depth: Int, capacity: Int, flattening: String?) throws(JSONParseError) -> [JSONMember] {
        guard depth <= JSONValue.maximumDepth else { throw error("nested deeper than \(JSONValue.maximumDepth)") }
        var members = [JSONMember]()
        index += 1
        skipSpace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "}") {
            index += 1
            return members
        }
        members.reserveCapacity(capacity)
        while true {
            skipSpace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { throw error("expected a member name") }
            let name = try parseString()
            skipSpace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { throw error("expected ':'") }
            index += 1
            skipSpace()
            let start = index
            if let flattening, name == flattening, index < bytes.count, bytes[index] == UInt8(ascii: "{") {
                // Checked at the depth parseValue would check it at.
                let fields = try readMembers(depth: depth + 1, capacity: 4, flattening: nil)
                members.append(JSONMember(name: name, value: .null, range: start..<index, fields: fields))
            } else {
                let value = try parseValue(depth: depth + 1)
                members.append(JSONMember(name: name, value: value, range: start..<index, fields: nil))
            }
            skipSpace()
            guard index < bytes.count else { throw error("unexpected end of text") }
            if bytes[index] == UInt8(ascii: ",") {
                index += 1
                continue
            }
            if bytes[index] == UInt8(ascii: "}") {
                index += 1
                return members
            }
            throw error("expected ',' or '}'")
        }
    }
}
