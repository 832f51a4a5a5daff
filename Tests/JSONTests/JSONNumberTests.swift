// Which JSON numbers a value keeps (JSONValue+Exact.swift): a 64-bit integer exactly, any other
// number in a double's range as that double; `firstInexactNumber` finds the rest with their
// path. A property check over random numbers: whatever is kept reads back as the same value.

import JSON
import Foundation
import PropertyBased
import Testing

@Suite struct JSONNumberTests {
    func firstInexact(_ text: String) -> (path: String, text: String)? {
        Array(text.utf8).withUnsafeBufferPointer { JSONValue.firstInexactNumber($0) }
    }

    static let refused: [(String, String, String)] = [
        ("1e400", "", "1e400"),
        ("[1e400,-1e400,5]", "[0]", "1e400"),
        ("[5,-1e400]", "[1]", "-1e400"),
        ("18446744073709551617", "", "18446744073709551617"),
        ("-9223372036854775809", "", "-9223372036854775809"),
        ("{\"value\":{\"a\":[0,{\"b\":1e-400}]}}", ".value.a[1].b", "1e-400"),
        ("{\"a b\":[2E+999]}", "[\"a b\"][0]", "2E+999"),
        ("{\"9\":123456789012345678901234567890}", "[\"9\"]", "123456789012345678901234567890"),
    ]

    @Test("a number a value cannot keep is found with its path and text", arguments: refused)
    func refusedNumbers(_ json: String, _ path: String, _ text: String) {
        let found = firstInexact(json)
        #expect(found?.path == path)
        #expect(found?.text == text)
    }

    @Test(
        "integers within 64 bits and numbers a double holds are kept",
        arguments: [
            "0", "-0", "9223372036854775807", "-9223372036854775808", "1.5", "0.1", "1e2", "1E+20", "-0.0",
            "5e-324", "1.7976931348623157e308", "0.10000000000000001", "0e999999", "0.000e-400",
            "12345678901234567890.0", "[1,{\"a\":[2.5,\"1e400\"]},true,null]",
        ])
    func keptNumbers(_ json: String) throws {
        #expect(firstInexact(json) == nil)
        let value = try JSONValue.parse(json)
        #expect(try JSONValue.parse(value.serialized()) == value, "\(json) reads back as \(value.serialized())")
    }

    @Test("a long number's text is cut in the report")
    func longText() {
        let found = firstInexact("1" + String(repeating: "0", count: 500))
        #expect(found?.text.count == 41)
        #expect(found?.text.hasSuffix("…") == true)
    }

    /// Random numbers in the forms clients write them: whatever is kept reads back as the
    /// same value, and what is not kept is an integer beyond 64 bits or out of a double's range.
    @Test("every random number kept reads back as the same value; every one refused could not be kept")
    func randomNumbers() async {
        await propertyCheck(count: 2000, input: Gen.int(in: Int.min...Int.max).array(of: 8)) { words in
            var random = Words(words.map { UInt64(bitPattern: Int64($0)) })
            for _ in 0..<4 {
                let text = Self.numberText(&random)
                let value = try JSONValue.parse(text)
                if firstInexact(text) == nil {
                    #expect(
                        try JSONValue.parse(value.serialized()) == value, "\(text) read back as \(value.serialized())")
                } else if case .double(let d) = value {
                    let integral = !text.contains(where: { ".eE".contains($0) })
                    #expect(integral || !d.isFinite || d == 0, "\(text) was refused")
                } else {
                    Issue.record("\(text) was refused though it parsed to \(value)")
                }
            }
        }
    }

    /// One number as text: an integer of up to 25 digits, a double's shortest text, a
    /// `%.17g`-style long form, or digits with a random exponent.
    static func numberText(_ r: inout Words) -> String {
        let sign = r.next() % 2 == 0 ? "" : "-"
        switch r.next() % 4 {
        case 0:
            let digits = Int(r.next() % 25) + 1
            var s = String(r.next() % 9 + 1)
            for _ in 1..<digits { s += String(r.next() % 10) }
            return sign + s
        case 1:
            let d = Double(bitPattern: r.next())
            return d.isFinite ? "\(d)" : "1.5"
        case 2:
            let d = Double(bitPattern: r.next())
            guard d.isFinite else { return "0.25" }
            return "\(d)".replacingOccurrences(of: "e", with: "0000001e")  // more digits than it holds
        default:
            return sign + "\(r.next() % 1000).\(r.next() % 1000)e\(Int(r.next() % 800) - 400)"
        }
    }
}

/// The property check's random words, handed out in turn.
struct Words {
    let words: [UInt64]
    var i = 0
    init(_ words: [UInt64]) { self.words = words }
    mutating func next() -> UInt64 {
        defer { i += 1 }
        return words[i % words.count] &+ UInt64(i / words.count)  // a few more than there are words
    }
}
