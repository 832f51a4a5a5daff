// A value's JSON length counted without writing it is the length written.

import Testing

@testable import JSON

@Suite struct JSONCountTests {
    @Test("writtenCount is the length write(to:) appends, escapes, nesting and scalars included")
    func countIsWrittenLength() {
        let strings = [
            "", "a", "\u{1}", "\"\\\n\r\t\u{8}\u{c}\u{1f}", String(repeating: "\u{1}", count: 1000),
            "é – ✓ 😀", "a\"b\\c\nd\u{0}e", String(repeating: "x", count: 37),
        ]
        var values: [JSONValue] = [.null, .bool(true), .bool(false), .int(0), .int(-9_223_372_036_854_775_808)]
        values += [.double(0.1), .double(1e300), .double(.nan), .array([]), .object([:])]
        values += strings.map { .string($0) }
        values.append(.array(values))
        values.append(.object(Dictionary(uniqueKeysWithValues: strings.enumerated().map { ($1, values[$0]) })))
        values.append(.object(["one\u{2}": .array([.int(1), .string("\u{3}")])]))
        for v in values {
            var out = [UInt8]()
            v.write(to: &out)
            #expect(v.writtenCount == out.count, "\(v)")
        }
    }
}
