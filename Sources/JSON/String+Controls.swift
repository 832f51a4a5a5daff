// Text a person reads where a line end or a terminal's escape must not pass as such: client
// names in assetctl's tables and in assetd's log (a name with a newline forged log lines).

extension String {
    /// The text with control characters (C0, DEL and C1) written as `\n`, `\t`, `\r` or `\uXXXX`.
    public var controlsEscaped: String {
        guard unicodeScalars.contains(where: Self.isControl) else { return self }
        var out = ""
        for u in unicodeScalars {
            switch u.value {
            case 0x0A: out += "\\n"
            case 0x09: out += "\\t"
            case 0x0D: out += "\\r"
            case _ where Self.isControl(u):
                let hex = String(u.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: out.unicodeScalars.append(u)
            }
        }
        return out
    }

    private static func isControl(_ u: Unicode.Scalar) -> Bool {
        u.value < 0x20 || (0x7F...0x9F).contains(u.value)
    }
}
