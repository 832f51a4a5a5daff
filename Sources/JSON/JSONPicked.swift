// Four members of an object picked by name as it is parsed (a JSON-RPC request's envelope):
// no array of members is built, and a name written in ASCII without escapes is matched by its
// bytes, never made into a String. Read this way or as a JSONValue, the same text gives the
// same values and the same errors.

/// A member picked by ``JSONValue/parseMembers(_:picking:flattening:)``.
public struct JSONPick: Sendable {
    /// Its value; `.null` when the value is an object read flat (`fields`).
    public let value: JSONValue
    /// The byte range of the value's text in the parsed document.
    public let range: Range<Int>
    /// The members of the value, an object, in text order, when it was read flat; nil otherwise.
    public let fields: [JSONMember]?
}

/// The members an object's text held under four names, each the last of its name, or nil.
public struct JSONPicked: Sendable {
    public var first, second, third, fourth: JSONPick?
    /// False if some number anywhere in the document is one a value does not keep
    /// (`firstInexactNumber` finds it).
    public internal(set) var numbersExact = true

    /// The four names, ASCII.
    public typealias Names = (StaticString, StaticString, StaticString, StaticString)

    mutating func set(_ slot: Int, _ pick: JSONPick) {
        switch slot {
        case 0: first = pick
        case 1: second = pick
        case 2: third = pick
        default: fourth = pick
        }
    }
}

extension JSONValue {
    /// Parses one JSON document that should be an object and keeps its members named
    /// `names` (ASCII; of a repeated name the last, as `parse` keeps it), with where each
    /// value's text lies; nil when the document is valid JSON but not an object. Other
    /// members are parsed and dropped. The member named `names[flattening]`, when its value
    /// is an object, comes with that object's members in `fields` (one level).
    public static func parseMembers(
        _ bytes: UnsafeBufferPointer<UInt8>,
        picking names: JSONPicked.Names, flattening: Int
    ) throws(JSONParseError) -> JSONPicked? {
        // The byte match below equals String's `==` only for ASCII names.
        precondition(names.0.isASCII && names.1.isASCII && names.2.isASCII && names.3.isASCII)
        // An unmatched name has slot -1: a flattening slot out of 0...3 would flatten those.
        precondition((0...3).contains(flattening), "flattening names one of the four slots")
        var parser = JSONParser(bytes: bytes)
        parser.skipSpace()
        guard parser.index < bytes.count, bytes[parser.index] == UInt8(ascii: "{") else {
            _ = try parse(bytes)  // the same errors as parse, or a valid non-object
            return nil
        }
        var picked = JSONPicked()
        try parser.pickMembers(names, flattening: flattening, into: &picked)
        parser.skipSpace()
        guard parser.index == bytes.count else { throw parser.error("unexpected text after the value") }
        picked.numbersExact = !parser.sawInexactNumber
        return picked
    }
}

extension JSONParser {
    /// Reads the object whose `{` is at `index` (depth 0) as `forEachMember` reads it, keeping
    /// the members named `names`.
    mutating func pickMembers(
        _ names: JSONPicked.Names, flattening: Int, into picked: inout JSONPicked
    ) throws(JSONParseError) {
        index += 1
        skipSpace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "}") {
            index += 1
            return
        }
        while true {
            skipSpace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { throw error("expected a member name") }
            let slot = try pickName(names)
            skipSpace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { throw error("expected ':'") }
            index += 1
            skipSpace()
            let start = index
            if slot == flattening, index < bytes.count, bytes[index] == UInt8(ascii: "{") {
                // Checked at the depth parseValue would check it at.
                let fields = try readMembers(depth: 1)
                picked.set(slot, JSONPick(value: .null, range: start..<index, fields: fields))
            } else {
                let value = try parseValue(depth: 1)
                if slot >= 0 { picked.set(slot, JSONPick(value: value, range: start..<index, fields: nil)) }
            }
            if try endOfMember() { return }
        }
    }

    /// Reads the member name whose `"` is at `index` and returns which of `names` it is, or
    /// -1. A name of ASCII bytes without escapes (nearly all) is compared as bytes: an ASCII
    /// string equals an ASCII name exactly when their bytes do. Any other is parsed as a
    /// string, with its errors, and compared as a String.
    mutating func pickName(_ names: JSONPicked.Names) throws(JSONParseError) -> Int {
        let start = index + 1
        var i = start
        while i < bytes.count {
            let b = bytes[i]
            if b == UInt8(ascii: "\"") {
                index = i + 1
                let run = UnsafeBufferPointer(rebasing: bytes[start..<i])
                if Self.same(run, names.0) { return 0 }
                if Self.same(run, names.1) { return 1 }
                if Self.same(run, names.2) { return 2 }
                if Self.same(run, names.3) { return 3 }
                return -1
            }
            if b < 0x20 || b == UInt8(ascii: "\\") || b >= 0x80 { break }
            i += 1
        }
        let name = try parseString()
        if name == names.0.description { return 0 }
        if name == names.1.description { return 1 }
        if name == names.2.description { return 2 }
        if name == names.3.description { return 3 }
        return -1
    }

    /// Whether `run` holds the bytes of `name`: lengths first, then bytes.
    @inline(__always)
    static func same(_ run: UnsafeBufferPointer<UInt8>, _ name: StaticString) -> Bool {
        guard run.count == name.utf8CodeUnitCount else { return false }
        let text = name.utf8Start
        for k in 0..<run.count where run[k] != text[k] { return false }
        return true
    }
}
