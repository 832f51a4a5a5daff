// The scalar writers behind `JSONValue.write(to:)`, public for renderers that print straight
// into a reply buffer (the point read): numbers and strings go into the bytes directly, with
// no intermediate String. What they print must equal what `write(to:)` prints.

extension JSONValue {
    /// Appends text of ours as it is: a literal's bytes copied at once, where appending a
    /// String's `utf8` goes through the generic sequence append (about 170 instructions
    /// against 40; a point read's reply has four such pieces).
    @inline(__always)
    public static func writeLiteral(_ text: StaticString, to out: inout [UInt8]) {
        out.append(contentsOf: UnsafeBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
    }

    /// Appends `i` in decimal.
    public static func writeInt(_ i: Int64, to out: inout [UInt8]) {
        out.appendText(maximum: 20) { $0.int(i) }
    }

    /// Appends `d` as Swift's `description` spells it (the shortest text that reads back as
    /// `d`), or `null` if it is not finite (JSON has no NaN or infinity).
    public static func writeDouble(_ d: Double, to out: inout [UInt8]) {
        out.appendText(maximum: JSONCursor.doubleMaximum) { $0.double(d) }
    }

    /// Appends `bytes` (UTF-8) as a JSON string literal.
    public static func writeString(bytes: UnsafeBufferPointer<UInt8>, to out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        var run = 0
        for (i, b) in bytes.enumerated() where b < 0x20 || b == UInt8(ascii: "\"") || b == UInt8(ascii: "\\") {
            out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[run..<i]))
            writeEscaped(b, to: &out)
            run = i + 1
        }
        out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[run...]))
        out.append(UInt8(ascii: "\""))
    }

    private static func writeEscaped(_ b: UInt8, to out: inout [UInt8]) {
        out.appendText(maximum: 6) { $0.escaped(b) }
    }
}
