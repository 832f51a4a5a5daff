// An object read as its members in text order, not as a dictionary: a caller that reads a
// few known members (a point read's params) spares hashing every name. Read this way or as a JSONValue, the same text gives the same values.

/// A member of a parsed object: its name, its value and where the value's text lies.
public struct JSONMember: Sendable {
    /// The member's name.
    public let name: String
    /// Its value.
    public let value: JSONValue
    /// The byte range of the value's text in the parsed document.
    public let range: Range<Int>
}

extension JSONValue {
    /// The object of `members`; of a repeated name, the last counts (as when parsed).
    public init(members: [JSONMember]) {
        var object = [String: JSONValue](minimumCapacity: members.count)
        for m in members { object[m.name] = m.value }
        self = .object(object)
    }
}

extension JSONParser {
    /// Reads the object whose `{` is at `index` as its members, as `forEachMember` reads it.
    mutating func readMembers(depth: Int, capacity: Int) throws(JSONParseError) -> [JSONMember] {
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
            let value = try parseValue(depth: depth + 1)
            members.append(JSONMember(name: name, value: value, range: start..<index))
            if try endOfMember() { return members }
        }
    }

    /// Reads what follows a member's value: true at the object's closing `}`, false at the
    /// `,` before another member (either consumed).
    mutating func endOfMember() throws(JSONParseError) -> Bool {
        skipSpace()
        guard index < bytes.count else { throw error("unexpected end of text") }
        if bytes[index] == UInt8(ascii: ",") {
            index += 1
            return false
        }
        if bytes[index] == UInt8(ascii: "}") {
            index += 1
            return true
        }
        throw error("expected ',' or '}'")
    }
}
