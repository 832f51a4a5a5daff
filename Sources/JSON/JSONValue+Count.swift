// How long a value's JSON text is, counted without writing it: a bound on a reply's size
// must not need the text itself (a string of control characters is six times as long
// written, \u0001 for each byte).

extension JSONValue {
    /// The number of bytes `write(to:)` appends.
    public var writtenCount: Int {
        switch self {
        case .string(let s): return JSONValue.writtenCount(of: s)
        case .array(let a): return 1 + max(a.count, 1) + a.reduce(0) { $0 + $1.writtenCount }
        case .object(let o):
            return 1 + max(o.count, 1)
                + o.reduce(0) { $0 + JSONValue.writtenCount(of: $1.key) + 1 + $1.value.writtenCount }
        default:
            // A scalar's text is at most a few dozen bytes: written, on the stack's worth.
            var out = [UInt8]()
            write(to: &out)
            return out.count
        }
    }

    /// The bytes of `s` as a JSON string literal, quotes included.
    public static func writtenCount(of s: String) -> Int {
        var s = s
        return s.withUTF8 { bytes in
            var n = bytes.count + 2
            var i = firstToEscape(bytes, from: 0)
            while i < bytes.count {
                n += JSONCursor.escapedCount(bytes[i]) - 1
                i = firstToEscape(bytes, from: i + 1)
            }
            return n
        }
    }
}
