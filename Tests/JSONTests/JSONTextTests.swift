// The JSON reader's shortcuts (strings without escapes taken straight from the input,
// integers of up to 18 characters added up without a String) give what the general path
// gives, at their edges.

import Testing
import JSON

@Suite struct JSONTextTests {
    func parse(_ text: String) throws -> JSONValue { try JSONValue.parse(text) }

    @Test("integers at the edges of the shortcut and of Int64 parse exactly; beyond them, doubles")
    func integers() throws {
        #expect(try parse("0") == .int(0))
        #expect(try parse("-0") == .int(0))
        #expect(try parse("7") == .int(7))
        #expect(try parse("-7") == .int(-7))
        #expect(try parse("999999999999999999") == .int(999_999_999_999_999_999))  // 18 digits
        #expect(try parse("-99999999999999999") == .int(-99_999_999_999_999_999))  // 18 characters
        #expect(try parse("-999999999999999999") == .int(-999_999_999_999_999_999))  // 19 characters
        #expect(try parse("9223372036854775807") == .int(Int64.max))
        #expect(try parse("-9223372036854775808") == .int(Int64.min))
        #expect(try parse("9223372036854775808") == .double(9_223_372_036_854_775_808))
        #expect(try parse("[12,-3,1.5,2e3]") == [.int(12), .int(-3), .double(1.5), .double(2000)])
        for bad in ["01", "-", "1.", "--1", "1e"] {
            #expect(throws: JSONParseError.self, "\(bad)") { try parse(bad) }
        }
    }

    @Test("strings with and without escapes, and their errors")
    func strings() throws {
        #expect(try parse(#""plain""#) == "plain")
        #expect(try parse(#""""#) == "")
        #expect(
            try parse(#""a long plain run, then an escape: \n and \u00e9 and \"q\"""#)
                == .string("a long plain run, then an escape: \n and é and \"q\""))
        #expect(try parse(#""ünïcødé""#) == "ünïcødé")
        #expect(try parse(#"{"k\"ey":"v","plain":"w"}"#) == ["k\"ey": "v", "plain": "w"])
        #expect(throws: JSONParseError.self) { try parse("\"tab\there\"") }
        #expect(throws: JSONParseError.self) { try parse("\"unterminated") }
        #expect(throws: JSONParseError.self) { try parse(#""bad \x escape""#) }
        let invalid: [UInt8] = [34, 0x61, 0xC3, 0x28, 34]
        #expect(throws: JSONParseError.self) { try invalid.withUnsafeBufferPointer { try JSONValue.parse($0) } }
        let invalidAfterEscape: [UInt8] = [34, 92, 110, 0xC3, 0x28, 34]
        #expect(throws: JSONParseError.self) {
            try invalidAfterEscape.withUnsafeBufferPointer { try JSONValue.parse($0) }
        }
    }

    @Test("a string's bytes are accepted exactly when they are UTF-8, with or without an escape before them")
    func utf8Edges() throws {
        let samples: [[UInt8]] = [
            Array("é".utf8), Array("日本".utf8), Array("🦊".utf8), Array("\u{FFFD}".utf8), Array("\u{10FFFF}".utf8),
            Array("\u{7F}\u{80}\u{7FF}\u{800}\u{FFFF}\u{10000}".utf8),
            [0x80], [0xBF], [0xC0, 0x80], [0xC1, 0xBF], [0xE0, 0x80, 0x80], [0xED, 0xA0, 0x80],
            [0xF4, 0x90, 0x80, 0x80],
            [0xF5, 0x80, 0x80, 0x80], [0xFF], [0xFE], [0xE2, 0x82], [0xF0, 0x9F, 0xA6], [0xEF, 0xBF],
            [0xEF, 0xBF, 0xBE],
            [0x61, 0xC3], [0xC3, 0x61], [0xEF, 0xBF, 0xBD, 0xFF],
        ]
        for sample in samples {
            let oracle = String(validating: sample, as: UTF8.self)
            for prefix in [[UInt8](), Array("x".utf8), Array(#"\n"#.utf8)] {
                let text = [34] + prefix + sample + [34]
                let got = try? text.withUnsafeBufferPointer { try JSONValue.parse($0) }
                let expected = oracle.map {
                    (prefix == Array(#"\n"#.utf8) ? "\n" : String(decoding: prefix, as: UTF8.self)) + $0
                }
                // Compared as bytes: String equality would let an equivalent respelling pass.
                #expect(
                    got?.stringValue.map { Array($0.utf8) } == expected.map { Array($0.utf8) }, "\(prefix) + \(sample)")
                #expect((got == nil) == (expected == nil), "\(prefix) + \(sample)")
            }
        }
    }

    @Test("integers are written as Swift prints them, at every edge; object members in key order")
    func writtenNumbersAndMembers() throws {
        let edges: [Int64] = [
            0, 1, -1, 9, 10, -10, 99, 100, 1_000_000_007, -987_654_321, Int64.max, Int64.min, Int64.max - 1,
            Int64.min + 1,
        ]
        for i in edges {
            #expect(JSONValue.int(i).serialized() == String(i))
            #expect(try parse(JSONValue.int(i).serialized()) == .int(i))
        }
        let object: JSONValue = ["b": 2, "a": ["z": 1, "é": -3, "Z": [7, -8]], "": true, "aa": nil]
        #expect(object.serialized() == #"{"":true,"a":{"Z":[7,-8],"z":1,"é":-3},"aa":null,"b":2}"#)
        // Objects of none, one and two members are written without sorting a copy: the two in
        // key order whichever order the dictionary holds them in.
        #expect(JSONValue.object([:]).serialized() == "{}")
        #expect(JSONValue.object(["k": [1]]).serialized() == #"{"k":[1]}"#)
        // A dictionary's order follows the process's hash seed: with this many pairs, both
        // orders come up (all in one order by chance: about 2^-100).
        let pairs =
            [("a", "b"), ("", "x"), ("Z", "z"), ("file", "owner"), ("z", "é"), ("aa", "ab")]
            + (0..<100).map { ("k\($0)", "k\($0)x") }
        var held = Set<Bool>()
        for (first, second) in pairs {
            let members: [String: JSONValue] = [second: .string(second), first: nil]
            held.insert(members.first?.key == first)
            #expect(JSONValue.object(members).serialized() == "{\"\(first)\":null,\"\(second)\":\"\(second)\"}")
        }
        #expect(held == [true, false], "both orders written")
    }

    @Test("strings are written escaped exactly where JSON needs it, and read back the same")
    func writtenStrings() throws {
        func text(_ s: String) -> String {
            var out = [UInt8]()
            JSONValue.writeString(s, to: &out)
            return String(decoding: out, as: UTF8.self)
        }
        #expect(text("plain é 日本") == "\"plain é 日本\"")
        #expect(text("q\"b\\n\n\r\t\u{1}\u{1f}") == #""q\"b\\n\n\r\t\u0001\u001f""#)
        #expect(text("") == "\"\"")
        for s in ["", "plain", "tab\there", "\u{0}nul", "quote\"", "back\\slash", "é\u{7f}\u{80}"] {
            #expect(try parse(text(s)) == .string(s))
        }
    }
}
