// Checks on the config text before TOMLKit reads it. toml++ asserts that a table header's name
// starts with a letter, digit, `_`, `-` or a quote (`[é]` aborted assetd; built without
// asserts it is undefined behaviour), and TOMLKit hands it a C string, so text after a NUL
// byte was silently ignored. Both are configuration errors here, with their line.

extension ConfigParser {
    /// The first line toml++ could not be given, and why; nil if the text is fit for it.
    static func unfitLine(_ text: String) -> (line: Int, message: String)? {
        let b = Array(text.utf8)
        func isBare(_ c: UInt8) -> Bool {
            (c >= 0x30 && c <= 0x39) || ((c | 0x20) >= 0x61 && (c | 0x20) <= 0x7A) || c == 0x5F || c == 0x2D
        }
        var line = 1
        var i = 0
        var atLineStart = true
        var inValue = false
        var depth = 0  // brackets and braces open in a value (an array may span lines)
        while i < b.count {
            let c = b[i]
            switch c {
            case 0:
                return (line, "the file contains a NUL byte")
            case 10:
                line += 1
                atLineStart = true
                if depth == 0 { inValue = false }
                i += 1
                continue
            case 0x20, 0x09, 0x0D:
                i += 1
                continue
            case UInt8(ascii: "#"):
                while i < b.count, b[i] != 10, b[i] != 0 { i += 1 }
                continue
            case UInt8(ascii: "\""), UInt8(ascii: "'"):
                if i + 2 < b.count, b[i + 1] == c, b[i + 2] == c {
                    // A multi-line string: to its closing triple quote.
                    i += 3
                    while i < b.count, !(b[i] == c && i + 2 < b.count && b[i + 1] == c && b[i + 2] == c) {
                        if b[i] == 0 { return (line, "the file contains a NUL byte") }
                        if b[i] == 10 { line += 1 }
                        if c == UInt8(ascii: "\""), b[i] == UInt8(ascii: "\\") { i += 1 }
                        i += 1
                    }
                    i += 3
                } else {
                    i += 1
                    while i < b.count, b[i] != c, b[i] != 10 {
                        if b[i] == 0 { return (line, "the file contains a NUL byte") }
                        if c == UInt8(ascii: "\""), b[i] == UInt8(ascii: "\\") { i += 1 }
                        i += 1
                    }
                    if i < b.count, b[i] == c { i += 1 }
                }
                atLineStart = false
                continue
            case UInt8(ascii: "[") where atLineStart && depth == 0:
                var j = i + 1
                if j < b.count, b[j] == UInt8(ascii: "[") { j += 1 }
                while j < b.count, b[j] == 0x20 || b[j] == 0x09 { j += 1 }
                if j < b.count, !(isBare(b[j]) || b[j] == UInt8(ascii: "\"") || b[j] == UInt8(ascii: "'")) {
                    return (line, "a table header must start with a name: letters, digits, _ and -, or a quoted name")
                }
                inValue = false
            case UInt8(ascii: "=") where depth == 0:
                inValue = true
            case UInt8(ascii: "["), UInt8(ascii: "{"):
                if inValue { depth += 1 }
            case UInt8(ascii: "]"), UInt8(ascii: "}"):
                if inValue { depth = max(0, depth - 1) }
            default:
                break
            }
            atLineStart = false
            i += 1
        }
        return nil
    }
}
