// The bare words of SQL text, each with its depth in parentheses: what is left once literals,
// quoted names and comments are skipped. Some things a clause does never reach the authorizer
// (the columns a USING join compares, a compound SELECT's shape), so they are read from here.
// Only ever a check that refuses: a word taken for a keyword that is none refuses too much.

enum SQLWords {
    /// Whether `body` holds for some bare word of `sql` and its depth in parentheses (0 at the
    /// top; below 0 after a stray `)`).
    static func contains(
        in sql: String, where body: (_ word: UnsafeBufferPointer<UInt8>.SubSequence, _ depth: Int) -> Bool
    ) -> Bool {
        var sql = sql
        return sql.withUTF8 { contains(in: $0, where: body) }
    }

    /// Whether `word` is `keyword` (lowercase ASCII), in any case.
    static func isKeyword(_ word: UnsafeBufferPointer<UInt8>.SubSequence, _ keyword: StaticString) -> Bool {
        guard word.count == keyword.utf8CodeUnitCount else { return false }
        return zip(word, UnsafeBufferPointer(start: keyword.utf8Start, count: word.count)).allSatisfy {
            $0 | 0x20 == $1
        }
    }

    private static func isNameByte(_ c: UInt8) -> Bool {
        c >= 0x80 || c == 0x5F || c == 0x24 || (c >= 0x30 && c <= 0x39) || ((c | 0x20) >= 0x61 && (c | 0x20) <= 0x7A)
    }

    private static func contains(
        in text: UnsafeBufferPointer<UInt8>, where body: (UnsafeBufferPointer<UInt8>.SubSequence, Int) -> Bool
    ) -> Bool {
        func skip(past end: UInt8, _ end2: UInt8?, from start: Int) -> Int {
            var j = start
            while j < text.count {
                if text[j] == end, end2 == nil || (j + 1 < text.count && text[j + 1] == end2!) {
                    return j + (end2 == nil ? 1 : 2)
                }
                j += 1
            }
            return j
        }
        var depth = 0
        var i = 0
        while i < text.count {
            let c = text[i]
            switch c {
            case UInt8(ascii: "'"), UInt8(ascii: "\""), UInt8(ascii: "`"):
                i = skip(past: c, nil, from: i + 1)
            case UInt8(ascii: "["):
                i = skip(past: UInt8(ascii: "]"), nil, from: i + 1)
            case UInt8(ascii: "-") where i + 1 < text.count && text[i + 1] == UInt8(ascii: "-"):
                i = skip(past: 10, nil, from: i + 2)
            case UInt8(ascii: "/") where i + 1 < text.count && text[i + 1] == UInt8(ascii: "*"):
                i = skip(past: UInt8(ascii: "*"), UInt8(ascii: "/"), from: i + 2)
            case UInt8(ascii: "("):
                depth += 1
                i += 1
            case UInt8(ascii: ")"):
                depth -= 1
                i += 1
            case _ where isNameByte(c):
                let start = i
                while i < text.count, isNameByte(text[i]) { i += 1 }
                if body(text[start..<i], depth) { return true }
            default:
                i += 1
            }
        }
        return false
    }
}
