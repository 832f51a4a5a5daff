// An object read as its members in text order, not as a dictionary: a caller that reads a
// few known members (a point read's params) spares hashing every name. Read this way or as a JSONValue, the same text gives the same values.

/// A member of a parsed object: its name and its value.
public struct JSONMember: Sendable {
    /// The member's name.
    public let name: String
    /// Its value.
    public let value: JSONValue
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
    /// Reads the object whose `{` is at `index` as its members, in text order.
    mutating func readMembers(depth: Int) throws(JSONParseError) -> [JSONMember] {
        var members = [JSONMember]()
        try forEachMember(depth: depth) { name, value in
            if members.isEmpty { members.reserveCapacity(4) }  // a point read's params: 2-4
            members.append(JSONMember(name: name, value: value))
        }
        return members
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
