// Which JSON numbers a value keeps. An integer written without fraction or exponent is kept
// exactly if it fits in 64 bits; any other number is kept as a double (as RFC 8259 expects)
// and written back in the shortest text that reads as the same double. Anything else would
// come back as another number, and is found here so that a request can refuse it.

extension JSONValue {
    /// The first number in the JSON document `bytes` that a value does not keep, with its path
    /// from the document's root (`.value[1]`, `["a b"]`) and its text (cut at 40 bytes); nil
    /// when every number is kept or the text is not JSON.
    ///
    /// Kept: an integer within 64 bits, exactly; a number with a fraction or exponent in a
    /// double's range, as that double (`1e2` reads back as `100.0`, `0.10000000000000001` as
    /// `0.1`: the same double). Not kept: `18446744073709551617` (an integer a double would
    /// round), `1e400` (infinite), `1e-400` (would become 0).
    public static func firstInexactNumber(_ bytes: UnsafeBufferPointer<UInt8>) -> (path: String, text: String)? {
        var parser = JSONParser(bytes: bytes)
        var path = [String]()
        parser.skipSpace()
        do { return try parser.findInexact(&path, depth: 0) } catch { return nil }
    }
}

/// What numbers a value keeps.
enum JSONNumber {
    /// True if the number `text`, which parsed to `d` rather than to a 64-bit integer, is kept
    /// as a double: it has a fraction or exponent (an integer beyond 64 bits is not kept,
    /// since a double would round it) and is in a double's range (not infinite, and not a
    /// number other than zero that became 0).
    static func isKept(_ text: UnsafeBufferPointer<UInt8>, _ d: Double, integral: Bool) -> Bool {
        guard !integral, d.isFinite else { return false }
        guard d == 0 else { return true }
        for c in text {
            if c == UInt8(ascii: "e") || c == UInt8(ascii: "E") { break }
            if c >= UInt8(ascii: "1") && c <= UInt8(ascii: "9") { return false }
        }
        return true
    }

    /// A path component for an object member: `.name`, or `["name"]` when not a plain word.
    static func member(_ name: String) -> String {
        let plain =
            !name.isEmpty
            && name.utf8.allSatisfy { c in
                c == UInt8(ascii: "_") || (c >= 48 && c <= 57) || ((c | 0x20) >= 0x61 && (c | 0x20) <= 0x7A)
            } && !(name.utf8.first! >= 48 && name.utf8.first! <= 57)  // not empty: checked first
        if plain { return "." + name }
        var out = [UInt8]()
        JSONValue.writeString(name, to: &out)
        return "[" + String(decoding: out, as: UTF8.self) + "]"
    }
}

extension JSONParser {
    /// Walks the value at `index` like `parseValue`, keeping the path, until a number that is
    /// not exact.
    mutating func findInexact(
        _ path: inout [String], depth: Int
    ) throws(JSONParseError) -> (path: String, text: String)? {
        guard depth <= JSONValue.maximumDepth else { throw error("nested deeper than \(JSONValue.maximumDepth)") }
        guard index < bytes.count else { throw error("unexpected end of text") }
        switch bytes[index] {
        case UInt8(ascii: "{"), UInt8(ascii: "["):
            let object = bytes[index] == UInt8(ascii: "{")
            let close = object ? UInt8(ascii: "}") : UInt8(ascii: "]")
            index += 1
            skipSpace()
            if index < bytes.count, bytes[index] == close { index += 1; return nil }
            var n = 0
            while true {
                skipSpace()
                if object {
                    guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else {
                        throw error("expected a member name")
                    }
                    path.append(JSONNumber.member(try parseString()))
                    skipSpace()
                    guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { throw error("expected ':'") }
                    index += 1
                    skipSpace()
                } else {
                    path.append("[\(n)]")
                }
                if let found = try findInexact(&path, depth: depth + 1) { return found }
                path.removeLast()
                n += 1
                skipSpace()
                guard index < bytes.count else { throw error("unexpected end of text") }
                if bytes[index] == UInt8(ascii: ",") { index += 1; continue }
                if bytes[index] == close { index += 1; return nil }
                throw error("expected ',' or '\(Character(Unicode.Scalar(close)))'")
            }
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            let start = index
            sawInexactNumber = false
            _ = try parseNumber()
            guard sawInexactNumber else { return nil }
            let text = String(
                decoding: UnsafeBufferPointer(rebasing: bytes[start..<min(index, start + 40)]), as: UTF8.self)
            return (path.joined(), index - start > 40 ? text + "…" : text)
        default:
            _ = try parseValue(depth: depth)
            return nil
        }
    }
}
