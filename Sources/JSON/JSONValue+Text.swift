// JSON text to JSONValue and back. The parser works on UTF-8 bytes, rejects invalid UTF-8
// and limits nesting (a deep document must be an error, never a stack overflow).

extension JSONValue {
    /// Nesting deeper than this is rejected by `parse`.
    public static let maximumDepth = 512

    /// Parses one JSON document; surrounding white space is allowed, anything else is not.
    public static func parse(_ text: String) throws(JSONParseError) -> JSONValue {
        var text = text
        let result: Result<JSONValue, JSONParseError> = text.withUTF8 { bytes in
            Result { () throws(JSONParseError) in try parse(bytes) }
        }
        return try result.get()
    }

    /// Parses one JSON document from UTF-8 bytes.
    public static func parse(_ bytes: UnsafeBufferPointer<UInt8>) throws(JSONParseError) -> JSONValue {
        var parser = JSONParser(bytes: bytes)
        parser.skipSpace()
        let value = try parser.parseValue(depth: 0)
        parser.skipSpace()
        guard parser.index == bytes.count else { throw parser.error("unexpected text after the value") }
        return value
    }

    /// Compact JSON text with object keys sorted.
    public func serialized() -> String {
        var out = [UInt8]()
        out.reserveCapacity(64)
        write(to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    /// Appends the compact JSON text to `out`.
    public func write(to out: inout [UInt8]) {
        switch self {
        case .null: JSONValue.writeLiteral("null", to: &out)
        case .bool(let b): b ? JSONValue.writeLiteral("true", to: &out) : JSONValue.writeLiteral("false", to: &out)
        case .int(let i): JSONValue.writeInt(i, to: &out)
        case .double(let d): JSONValue.writeDouble(d, to: &out)
        case .string(let s): JSONValue.writeString(s, to: &out)
        case .array(let a):
            out.append(UInt8(ascii: "["))
            for (i, v) in a.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                v.write(to: &out)
            }
            out.append(UInt8(ascii: "]"))
        case .object(let o):
            out.append(UInt8(ascii: "{"))
            switch o.count {
            case 0: break
            case 1:
                // One member (a put's `{"commit":N}`): nothing to sort.
                let (k, v) = o[o.startIndex]
                JSONValue.writeMember(k, v, to: &out)
            case 2:
                // Two (a value naming its file and owner): one comparison, no sorted copy.
                let a = o[o.startIndex]
                let b = o[o.index(after: o.startIndex)]
                let (first, second) = a.key < b.key ? (a, b) : (b, a)
                JSONValue.writeMember(first.key, first.value, to: &out)
                out.append(UInt8(ascii: ","))
                JSONValue.writeMember(second.key, second.value, to: &out)
            default:
                // The members sorted by name, not the names then each looked up again.
                for (i, (k, v)) in o.sorted(by: { $0.key < $1.key }).enumerated() {
                    if i > 0 { out.append(UInt8(ascii: ",")) }
                    JSONValue.writeMember(k, v, to: &out)
                }
            }
            out.append(UInt8(ascii: "}"))
        }
    }

    /// Appends `"k":v`.
    private static func writeMember(_ k: String, _ v: JSONValue, to out: inout [UInt8]) {
        writeString(k, to: &out)
        out.append(UInt8(ascii: ":"))
        v.write(to: &out)
    }

    /// Appends `s` as a JSON string literal.
    public static func writeString(_ s: String, to out: inout [UInt8]) {
        var s = s
        s.withUTF8 { writeString(bytes: $0, to: &out) }
    }
}

/// Why a JSON text was refused, with the byte offset where it went wrong.
public struct JSONParseError: Error, Sendable, CustomStringConvertible {
    /// What was wrong.
    public let reason: String
    /// Byte offset into the text.
    public let offset: Int
    public var description: String { "invalid JSON at byte \(offset): \(reason)" }
}

struct JSONParser {
    let bytes: UnsafeBufferPointer<UInt8>
    var index = 0
    /// Set when a number was read that a value does not keep (`1e400`, `18446744073709551617`:
    /// see `JSONValue.firstInexactNumber`).
    var sawInexactNumber = false

    init(bytes: UnsafeBufferPointer<UInt8>) { self.bytes = bytes }

    func error(_ reason: String) -> JSONParseError { JSONParseError(reason: reason, offset: index) }

    mutating func skipSpace() {
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x09, 0x0A, 0x0D: index += 1
            default: return
            }
        }
    }

    mutating func parseValue(depth: Int) throws(JSONParseError) -> JSONValue {
        guard depth <= JSONValue.maximumDepth else { throw error("nested deeper than \(JSONValue.maximumDepth)") }
        guard index < bytes.count else { throw error("unexpected end of text") }
        switch bytes[index] {
        case UInt8(ascii: "{"): return try parseObject(depth: depth)
        case UInt8(ascii: "["): return try parseArray(depth: depth)
        case UInt8(ascii: "\""): return .string(try parseString())
        case UInt8(ascii: "t"): try literal("true"); return .bool(true)
        case UInt8(ascii: "f"): try literal("false"); return .bool(false)
        case UInt8(ascii: "n"): try literal("null"); return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try parseNumber()
        default: throw error("unexpected character")
        }
    }

    mutating func literal(_ word: StaticString) throws(JSONParseError) {
        // A StaticString's bytes in place: an Array of them was an allocation per true or null.
        let w = UnsafeBufferPointer(start: word.utf8Start, count: word.utf8CodeUnitCount)
        guard index + w.count <= bytes.count else { throw error("unexpected end of text") }
        for i in 0..<w.count where bytes[index + i] != w[i] { throw error("unexpected character") }
        index += w.count
    }

    mutating func parseObject(depth: Int) throws(JSONParseError) -> JSONValue {
        var members = [String: JSONValue]()
        try forEachMember(depth: depth) { key, value in
            // Room for 8 at once: grown from empty, a 5-member object was hashed four times.
            // Made with its capacity, not reserved: `reserveCapacity` on the empty dictionary
            // took the library's unspecialized path, about 400 instructions more an object.
            if members.isEmpty { members = [String: JSONValue](minimumCapacity: 8) }
            members[key] = value
        }
        return .object(members)
    }

    /// Reads the object whose `{` is at `index`, handing each member to `body` in order.
    mutating func forEachMember(depth: Int, _ body: (String, JSONValue) -> Void) throws(JSONParseError) {
        guard depth <= JSONValue.maximumDepth else { throw error("nested deeper than \(JSONValue.maximumDepth)") }
        index += 1
        skipSpace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "}") { index += 1; return }
        while true {
            skipSpace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { throw error("expected a member name") }
            let key = try parseString()
            skipSpace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { throw error("expected ':'") }
            index += 1
            skipSpace()
            body(key, try parseValue(depth: depth + 1))
            if try endOfMember() { return }
        }
    }

    mutating func parseArray(depth: Int) throws(JSONParseError) -> JSONValue {
        index += 1
        var elements = [JSONValue]()
        skipSpace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "]") { index += 1; return .array(elements) }
        while true {
            skipSpace()
            elements.append(try parseValue(depth: depth + 1))
            skipSpace()
            guard index < bytes.count else { throw error("unexpected end of text") }
            if bytes[index] == UInt8(ascii: ",") { index += 1; continue }
            if bytes[index] == UInt8(ascii: "]") { index += 1; return .array(elements) }
            throw error("expected ',' or ']'")
        }
    }

    mutating func parseNumber() throws(JSONParseError) -> JSONValue {
        let start = index
        var integral = true
        if bytes[index] == UInt8(ascii: "-") { index += 1 }
        guard index < bytes.count, (48...57).contains(bytes[index]) else { throw error("invalid number") }
        if bytes[index] == 48 {
            index += 1
        } else {
            while index < bytes.count, (48...57).contains(bytes[index]) { index += 1 }
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            integral = false
            index += 1
            guard index < bytes.count, (48...57).contains(bytes[index]) else { throw error("invalid number") }
            while index < bytes.count, (48...57).contains(bytes[index]) { index += 1 }
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
            integral = false
            index += 1
            if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") {
                index += 1
            }
            guard index < bytes.count, (48...57).contains(bytes[index]) else { throw error("invalid number") }
            while index < bytes.count, (48...57).contains(bytes[index]) { index += 1 }
        }
        // Up to 18 digits cannot overflow: added up here without making a String.
        if integral, index - start <= 18 {
            var v: Int64 = 0
            var i = start
            let negative = bytes[i] == UInt8(ascii: "-")
            if negative { i += 1 }
            while i < index {
                v = v * 10 + Int64(bytes[i] - 48)
                i += 1
            }
            return .int(negative ? -v : v)
        }
        let run = UnsafeBufferPointer(rebasing: bytes[start..<index])
        let text = String(decoding: run, as: UTF8.self)
        if integral, let i = Int64(text) { return .int(i) }
        guard let d = Double(text) else { throw error("invalid number") }
        if !JSONNumber.isKept(run, d, integral: integral) { sawInexactNumber = true }
        return .double(d)
    }

    mutating func parseString() throws(JSONParseError) -> String {
        index += 1
        // Most strings (member names, keys) have no escape: made straight from the input,
        // scanned with locals (the loop over the stored index, with its bounds checks, cost
        // about 20 instructions more a string).
        let start = index
        if let base = bytes.baseAddress {
            let count = bytes.count
            var i = start
            var high: UInt8 = 0
            while i < count {
                let b = base[i]
                if b == UInt8(ascii: "\"") {
                    index = i + 1
                    let run = UnsafeBufferPointer(start: base + start, count: i - start)
                    guard let s = JSONParser.string(run, ascii: high < 0x80) else {
                        throw error("invalid UTF-8 in string")
                    }
                    return s
                }
                if b < 0x20 || b == UInt8(ascii: "\\") { break }
                high |= b
                i += 1
            }
        }
        var out = [UInt8]()
        var runStart = start
        index = start
        while true {
            guard index < bytes.count else { throw error("unterminated string") }
            let b = bytes[index]
            if b == UInt8(ascii: "\"") {
                out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[runStart..<index]))
                index += 1
                break
            }
            if b < 0x20 { throw error("control character in string") }
            if b == UInt8(ascii: "\\") {
                out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[runStart..<index]))
                try parseEscape(into: &out)
                runStart = index
                continue
            }
            index += 1
        }
        let s = out.withUnsafeBufferPointer { JSONParser.string($0, ascii: false) }
        guard let s else { throw error("invalid UTF-8 in string") }
        return s
    }

    /// The string the bytes spell, or nil if they are not UTF-8. Not `String(validating:)`:
    /// unspecialized, it looked up generic metadata for every string, about a tenth of the
    /// loop's time parsing requests. Decoding repairs ill-formed input with U+FFFD, which
    /// changes its bytes, so an unchanged result is the proof of valid input.
    static func string(_ bytes: UnsafeBufferPointer<UInt8>, ascii: Bool) -> String? {
        // Up to 15 bytes a String is held inline, and this initializer then checks ASCII with
        // a mask over the two words instead of a scan: about 40 instructions less a name.
        if ascii, bytes.count <= 15, let base = bytes.baseAddress {
            return String(unsafeUninitializedCapacity: bytes.count) { buffer in
                buffer.baseAddress!.update(from: base, count: bytes.count)
                return bytes.count
            }
        }
        let s = String(decoding: bytes, as: UTF8.self)
        if ascii { return s }
        return s.utf8.elementsEqual(bytes) ? s : nil
    }

    mutating func parseEscape(into out: inout [UInt8]) throws(JSONParseError) {
        index += 1
        guard index < bytes.count else { throw error("unterminated escape") }
        let c = bytes[index]
        index += 1
        switch c {
        case UInt8(ascii: "\""): out.append(34)
        case UInt8(ascii: "\\"): out.append(92)
        case UInt8(ascii: "/"): out.append(47)
        case UInt8(ascii: "b"): out.append(8)
        case UInt8(ascii: "f"): out.append(12)
        case UInt8(ascii: "n"): out.append(10)
        case UInt8(ascii: "r"): out.append(13)
        case UInt8(ascii: "t"): out.append(9)
        case UInt8(ascii: "u"):
            var scalar = try hex4()
            if (0xD800..<0xDC00).contains(scalar) {
                guard index + 1 < bytes.count, bytes[index] == 92, bytes[index + 1] == UInt8(ascii: "u") else {
                    throw error("unpaired surrogate")
                }
                index += 2
                let low = try hex4()
                guard (0xDC00..<0xE000).contains(low) else { throw error("unpaired surrogate") }
                scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
            } else if (0xDC00..<0xE000).contains(scalar) {
                throw error("unpaired surrogate")
            }
            guard let u = Unicode.Scalar(scalar) else { throw error("invalid escape") }
            out.append(contentsOf: String(Character(u)).utf8)
        default: throw error("invalid escape")
        }
    }

    mutating func hex4() throws(JSONParseError) -> UInt32 {
        guard index + 4 <= bytes.count else { throw error("invalid \\u escape") }
        var v: UInt32 = 0
        for _ in 0..<4 {
            let b = bytes[index]
            let d: UInt32
            switch b {
            case 48...57: d = UInt32(b - 48)
            case 65...70: d = UInt32(b - 55)
            case 97...102: d = UInt32(b - 87)
            default: throw error("invalid \\u escape")
            }
            v = v << 4 | d
            index += 1
        }
        return v
    }
}
