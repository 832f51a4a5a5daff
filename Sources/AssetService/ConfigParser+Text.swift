// Checks on the config text before TOMLKit reads it, for what toml++ 3.4 asserts rather than
// refuses (each aborted assetd; built without asserts it is undefined behaviour): a table
// header's name not starting with a letter, digit, `_`, `-` or quote (`[é]`), a control
// character, a date's `T` (or space and digit) without a time after it, a `}` where an array's value belongs. TOMLKit hands it a C string, so text after
// a NUL byte was silently ignored. All are configuration errors here, with their line.

extension ConfigParser {
    /// The first line toml++ could not be given, and why; nil if the text is fit for it.
    static func unfitLine(_ text: String) -> (line: Int, message: String)? {
        let b = Array(text.utf8)
        func isBare(_ c: UInt8) -> Bool {
            (c >= 0x30 && c <= 0x39) || ((c | 0x20) >= 0x61 && (c | 0x20) <= 0x7A) || c == 0x5F || c == 0x2D
        }
        func isControl(_ c: UInt8) -> Bool { (c < 0x20 && c != 0x09 && c != 0x0A && c != 0x0D) || c == 0x7F }
        func hex(_ c: UInt8) -> String {
            "U+" + String(repeating: "0", count: c < 16 ? 3 : 2) + String(c, radix: 16, uppercase: true)
        }
        var line = 1
        var i = b.starts(with: [0xEF, 0xBB, 0xBF]) ? 3 : 0  // toml++ skips a byte order mark
        var atLineStart = true
        var inValue = false
        var open = [UInt8]()  // brackets and braces open in a value (an array may span lines)
        var valueDue = false  // after an array's [ or , a value belongs next
        while i < b.count {
            let c = b[i]
            let wasDue = valueDue
            if !(c == 0x20 || c == 0x09 || c == 0x0D || c == 10 || c == UInt8(ascii: "#")) { valueDue = false }
            switch c {
            case 0:
                return (line, "the file contains a NUL byte")
            case 1...8, 11, 12, 14...31, 127:
                // TOML allows none outside escapes; toml++ asserted on some.
                return (line, "the file contains a control character (\(hex(c)))")
            case 10:
                line += 1
                atLineStart = true
                if open.isEmpty { inValue = false }
                i += 1
                continue
            case 0x20, 0x09, 0x0D:
                i += 1
                continue
            case UInt8(ascii: "#"):
                while i < b.count, b[i] != 10, b[i] != 0, !isControl(b[i]) { i += 1 }
                continue
            case UInt8(ascii: "0")...UInt8(ascii: "9") where inValue && isDateWithoutTime(b, i):
                // toml++ asserted that a time of day follows a date's T (or its space and digit).
                return (line, "a date-time needs a time of day (HH:MM:SS) after its T")
            case UInt8(ascii: "\""), UInt8(ascii: "'"):
                if i + 2 < b.count, b[i + 1] == c, b[i + 2] == c {
                    // A multi-line string: to its closing triple quote.
                    i += 3
                    while i < b.count, !(b[i] == c && i + 2 < b.count && b[i + 1] == c && b[i + 2] == c) {
                        if b[i] == 0 { return (line, "the file contains a NUL byte") }
                        if isControl(b[i]) { return (line, "the file contains a control character (\(hex(b[i])))") }
                        if b[i] == 10 { line += 1 }
                        if c == UInt8(ascii: "\""), b[i] == UInt8(ascii: "\\") { i += 1 }
                        i += 1
                    }
                    i += 3
                } else {
                    i += 1
                    while i < b.count, b[i] != c, b[i] != 10 {
                        if b[i] == 0 { return (line, "the file contains a NUL byte") }
                        if isControl(b[i]) { return (line, "the file contains a control character (\(hex(b[i])))") }
                        if c == UInt8(ascii: "\""), b[i] == UInt8(ascii: "\\") { i += 1 }
                        i += 1
                    }
                    if i < b.count, b[i] == c { i += 1 }
                }
                atLineStart = false
                continue
            case UInt8(ascii: "[") where atLineStart && open.isEmpty:
                var j = i + 1
                if j < b.count, b[j] == UInt8(ascii: "[") { j += 1 }
                while j < b.count, b[j] == 0x20 || b[j] == 0x09 { j += 1 }
                if j < b.count, !(isBare(b[j]) || b[j] == UInt8(ascii: "\"") || b[j] == UInt8(ascii: "'")) {
                    return (line, "a table header must start with a name: letters, digits, _ and -, or a quoted name")
                }
                inValue = false
            case UInt8(ascii: "=") where open.isEmpty:
                inValue = true
            case UInt8(ascii: "["), UInt8(ascii: "{"):
                if inValue {
                    open.append(c)
                    valueDue = c == UInt8(ascii: "[")
                }
            case UInt8(ascii: ","):
                valueDue = inValue && open.last == UInt8(ascii: "[")
            case UInt8(ascii: "]"), UInt8(ascii: "}"):
                // toml++ asserted on a } where an array's value belongs.
                if c == UInt8(ascii: "}"), wasDue { return (line, "an array holds a } where a value belongs") }
                if inValue { _ = open.popLast() }
            default:
                break
            }
            atLineStart = false
            i += 1
        }
        return nil
    }

    /// Whether a date starts at `i` followed by `T` or `t`, or by a space and a digit, with no
    /// `HH:` after that: a date-time without its time of day.
    private static func isDateWithoutTime(_ b: [UInt8], _ i: Int) -> Bool {
        func digit(_ j: Int) -> Bool { j < b.count && b[j] >= 0x30 && b[j] <= 0x39 }
        guard i + 10 < b.count, b[i + 4] == UInt8(ascii: "-"), b[i + 7] == UInt8(ascii: "-"),
            [0, 1, 2, 3, 5, 6, 8, 9].allSatisfy({ digit(i + $0) })
        else { return false }
        let separator = b[i + 10]
        guard separator | 0x20 == UInt8(ascii: "t") || (separator == 0x20 && digit(i + 11)) else { return false }
        return !(digit(i + 11) && digit(i + 12) && i + 13 < b.count && b[i + 13] == UInt8(ascii: ":"))
    }
}
