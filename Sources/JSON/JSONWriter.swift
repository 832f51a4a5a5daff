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
        let magnitude = i.magnitude
        if i < 0 { out.append(UInt8(ascii: "-")) }
        // At most 20 digits; written backwards into a tuple on the stack.
        var digits: (UInt64, UInt64, UInt64) = (0, 0, 0)
        withUnsafeMutableBytes(of: &digits) { buffer in
            var at = buffer.count
            prependDigits(magnitude, count: 1, to: buffer, at: &at)
            out.append(contentsOf: UnsafeRawBufferPointer(rebasing: buffer[at...]))
        }
    }

    /// Writes `value`'s decimal digits, at least `count` of them, backwards into `buffer`
    /// before `at`, and moves `at` to the first.
    @inline(__always)
    private static func prependDigits(
        _ value: UInt64, count: Int, to buffer: UnsafeMutableRawBufferPointer, at: inout Int
    ) {
        var value = value
        var written = 0
        repeat {
            at -= 1
            buffer[at] = UInt8(truncatingIfNeeded: value % 10) &+ 48
            value /= 10
            written += 1
        } while value != 0 || written < count
    }

    /// Appends `d` as Swift's `description` spells it (the shortest text that reads back as
    /// `d`), or `null` if it is not finite (JSON has no NaN or infinity).
    public static func writeDouble(_ d: Double, to out: inout [UInt8]) {
        guard d.isFinite else {
            writeLiteral("null", to: &out)
            return
        }
        if writeMicroseconds(d, to: &out) { return }
        // The standard library prints a Double into a stream from a buffer on the stack.
        withUnsafeMutablePointer(to: &out) { pointer in
            var sink = ByteSink(out: pointer)
            d.write(to: &sink)
        }
    }

    /// Appends `d` if it is at least 1, below 2^32 and reads back from a decimal with at most
    /// six digits after the point, as the times in replies do; false (nothing written)
    /// otherwise. Below 2^32 two doubles are less than 10^-6 apart, so at most one such decimal
    /// reads back as `d`, and it is then the shortest that does: the text `description` prints.
    /// About 450 instructions with the append, against 660 through the general printer.
    static func writeMicroseconds(_ d: Double, to out: inout [UInt8]) -> Bool {
        guard d >= 1 && d < 4_294_967_296 else { return false }
        let micros = (d * 1_000_000).rounded()
        // micros is an integer below 2^53, so the division is exact up to one rounding: equal
        // means the decimal micros / 10^6 reads back as d.
        guard micros / 1_000_000 == d else { return false }
        let m = UInt64(micros)
        let whole = UInt32(truncatingIfNeeded: m / 1_000_000)
        var fraction = UInt32(truncatingIfNeeded: m % 1_000_000)
        var digits = 6
        if fraction == 0 {
            digits = 1  // "1764193925.0", as description prints a whole number
        } else {
            while fraction % 10 == 0 {
                fraction /= 10
                digits -= 1
            }
        }
        // At most 10 + 1 + 6 bytes, written backwards on the stack and appended at once.
        var text: (UInt64, UInt64, UInt64) = (0, 0, 0)
        withUnsafeMutableBytes(of: &text) { buffer in
            var at = buffer.count
            prependDigits(UInt64(fraction), count: digits, to: buffer, at: &at)
            at -= 1
            buffer[at] = UInt8(ascii: ".")
            prependDigits(UInt64(whole), count: 1, to: buffer, at: &at)
            out.append(contentsOf: UnsafeRawBufferPointer(rebasing: buffer[at...]))
        }
        return true
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

    private static let hexDigits: [UInt8] = Array("0123456789abcdef".utf8)

    private static func writeEscaped(_ b: UInt8, to out: inout [UInt8]) {
        switch b {
        case UInt8(ascii: "\""): out.append(contentsOf: [92, 34])
        case UInt8(ascii: "\\"): out.append(contentsOf: [92, 92])
        case 0x0A: out.append(contentsOf: [92, UInt8(ascii: "n")])
        case 0x0D: out.append(contentsOf: [92, UInt8(ascii: "r")])
        case 0x09: out.append(contentsOf: [92, UInt8(ascii: "t")])
        default:
            let hex = JSONValue.hexDigits
            out.append(contentsOf: [92, UInt8(ascii: "u"), 48, 48, hex[Int(b >> 4)], hex[Int(b & 15)]])
        }
    }
}

/// Takes what the standard library prints into `out`. Its ASCII path (`_writeASCII`, which a
/// Double's `write(to:)` uses) spares making a String.
private struct ByteSink: TextOutputStream {
    let out: UnsafeMutablePointer<[UInt8]>

    mutating func write(_ string: String) {
        var string = string
        string.withUTF8 { out.pointee.append(contentsOf: $0) }
    }

    mutating func _writeASCII(_ buffer: UnsafeBufferPointer<UInt8>) {
        out.pointee.append(contentsOf: buffer)
    }
}
