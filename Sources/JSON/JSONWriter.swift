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
        var i = firstToEscape(bytes, from: 0)
        while i < bytes.count {
            out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[run..<i]))
            writeEscaped(bytes[i], to: &out)
            run = i + 1
            i = firstToEscape(bytes, from: run)
        }
        out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[run...]))
        out.append(UInt8(ascii: "\""))
    }

    /// The index of the first byte from `start` on that a JSON string may not hold as it is
    /// (below 0x20, `"` or `\`), or `bytes.count`. Eight bytes a step: byte by byte, a
    /// 50-byte path took about 500 instructions to scan.
    static func firstToEscape(_ bytes: UnsafeBufferPointer<UInt8>, from start: Int) -> Int {
        guard let base = bytes.baseAddress else { return start }
        let ones: UInt64 = 0x0101_0101_0101_0101
        var i = start
        while i &+ 8 <= bytes.count {
            // Byte 0 lowest on any machine. A byte's flag is its top bit in `found`: below
            // 0x20 (x - 0x20 borrows) or equal to `"` or `\` (zero after the XOR), each with
            // its own top bit clear. A borrow can flag a byte after a flagged one, never one
            // before it, so the lowest flag is a true one.
            let x = UInt64(littleEndian: UnsafeRawPointer(base + i).loadUnaligned(as: UInt64.self))
            let quote = x ^ (ones &* 0x22)
            let backslash = x ^ (ones &* 0x5C)
            let found =
                ((x &- ones &* 0x20) & ~x | (quote &- ones) & ~quote | (backslash &- ones) & ~backslash)
                & (ones &* 0x80)
            if found != 0 { return i &+ found.trailingZeroBitCount >> 3 }
            i &+= 8
        }
        while i < bytes.count {
            let b = base[i]
            if b < 0x20 || b == UInt8(ascii: "\"") || b == UInt8(ascii: "\\") { return i }
            i &+= 1
        }
        return i
    }

    private static func writeEscaped(_ b: UInt8, to out: inout [UInt8]) {
        out.appendText(maximum: 6) { $0.escaped(b) }
    }
}
