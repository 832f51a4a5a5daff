// How verify names a file whose path is not UTF-8: never as a String with U+FFFD, which may be
// another file's name (docs/PROTOCOL.md, verify).

enum OrphanName {
    /// The bytes for people: valid UTF-8 as it is, each invalid byte as `\xHH`.
    static func escaped(_ bytes: [UInt8]) -> String {
        var out = ""
        var i = 0
        while i < bytes.count {
            let lead = bytes[i]
            let length =
                lead < 0x80 ? 1 : lead >> 5 == 0b110 ? 2 : lead >> 4 == 0b1110 ? 3 : lead >> 3 == 0b11110 ? 4 : 0
            if length > 0, i + length <= bytes.count,
                let s = String(validating: bytes[i..<i + length], as: UTF8.self)
            {
                out += s
                i += length
            } else {
                out += "\\x" + String(lead, radix: 16, uppercase: true).leftPadded(to: 2)
                i += 1
            }
        }
        return out
    }

    /// Every byte but letters, digits, `-._~/` as `%HH`: the exact bytes, in ASCII.
    static func percentEncoded(_ bytes: [UInt8]) -> String {
        var out = ""
        for b in bytes {
            switch b {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"),
                UInt8(ascii: "~"), UInt8(ascii: "/"):
                out.unicodeScalars.append(Unicode.Scalar(b))
            default:
                out += "%" + String(b, radix: 16, uppercase: true).leftPadded(to: 2)
            }
        }
        return out
    }
}

extension String {
    fileprivate func leftPadded(to n: Int) -> String { String(repeating: "0", count: max(0, n - count)) + self }
}
