// The writers a renderer prints with straight into a reply buffer print what the standard
// library's descriptions print: a reply written either way is the same bytes.

import Testing

@testable import JSON

@Suite struct JSONWriterTests {
    @Test("doubles are written as their description, at the edges and for random timestamps and values")
    func doublesAsDescription() {
        var edges: [Double] = [
            0, -0.0, 1, -1, 0.1, 1e-5, 1e-4, 123_456_789.123, 1e15, 1e16, 1e17, 9_007_199_254_740_992, 0x1p53 + 2,
            .ulpOfOne, .leastNonzeroMagnitude, .leastNormalMagnitude, .greatestFiniteMagnitude,
            -.greatestFiniteMagnitude, 1_795_720_188.490_280_4, 1_795_720_188.5,
        ]
        var rng = SystemRandomNumberGenerator()
        for _ in 0..<20_000 {
            edges.append(1_700_000_000 + Double.random(in: 0..<200_000_000, using: &rng))
            edges.append(Double(bitPattern: rng.next()))
            // Times as the store keeps them (microseconds), and their neighbours, which do not
            // read back from six digits, across the whole range of the short path.
            let micros = Double(Int64.random(in: 1_000_000..<4_294_967_296_000_000, using: &rng))
            let scaled =
                Double(Int64.random(in: 1...4_294_967_295, using: &rng)) / [1, 10, 1000, 100_000].randomElement()!
            for d in [micros / 1_000_000, scaled, 1_700_000_000 + micros.truncatingRemainder(dividingBy: 1e14) / 1e6] {
                edges += [d, d.nextUp, d.nextDown]
            }
        }
        edges += [
            Double(1).nextDown, 1.000_001, Double(1.000_001).nextUp, 4_294_967_295.999_999, 4_294_967_296, 0x1p31, 2.5,
            10, 1e9,
        ]
        for d in edges where d.isFinite {
            var out = [UInt8]()
            JSONValue.writeDouble(d, to: &out)
            #expect(String(decoding: out, as: UTF8.self) == d.description, "\(d)")
            #expect(JSONValue.double(d).serialized() == d.description)
        }
        for d in [Double.nan, .infinity, -.infinity] {
            var out = [UInt8]()
            JSONValue.writeDouble(d, to: &out)
            #expect(out == Array("null".utf8))
        }
    }

    @Test("times to the microsecond take the short path, with their description's text")
    func microsecondsShortPath() {
        func shortPath(_ d: Double, _ out: inout [UInt8]) -> Bool {
            var written = false
            out.appendText(maximum: 17) { written = $0.microseconds(d) }
            return written
        }
        var rng = SystemRandomNumberGenerator()
        for _ in 0..<20_000 {
            let d = Double(Int64.random(in: 1_000_000..<4_294_967_296_000_000, using: &rng)) / 1_000_000
            var out: [UInt8] = [UInt8(ascii: "x")]
            #expect(shortPath(d, &out), "\(d)")
            #expect(String(decoding: out, as: UTF8.self) == "x" + d.description, "\(d)")
        }
        var out = [UInt8]()
        for d in [0.5, 1.000_000_1, 1_764_193_925.123_456_7, 0x1p32, -5.25] {
            #expect(!shortPath(d, &out), "\(d)")
        }
        #expect(out.isEmpty)
    }

    @Test("times the clock gives, to its double's precision, take a short path with description's text")
    func tenthsOfMicrosecondsShortPath() {
        func written(_ d: Double) -> String? {
            var out: [UInt8] = [UInt8(ascii: "x")]
            var wrote = false
            out.appendText(maximum: 32) { wrote = $0.microseconds(d) || $0.tenthsOfMicroseconds(d) }
            return wrote ? String(decoding: out.dropFirst(), as: UTF8.self) : nil
        }
        var rng = SystemRandomNumberGenerator()
        var times: [Double] = [0x1p29, 0x1p30, 0x1p31, Double(0x1p32).nextDown, Double(0x1p30).nextDown]
        // Exact ties between two seven-decimal texts: description takes the even last digit.
        let ties: [(Double, String)] = [
            (536_870_912.003_906_25, "536870912.0039062"), (536_870_912.011_718_75, "536870912.0117188"),
            (2_147_483_648.003_906_25, "2147483648.0039062"),
        ]
        for (d, text) in ties {
            #expect(d.description == text)
            #expect(written(d) == text, "\(d)")
        }
        for _ in 0..<100_000 {
            // Every double of the range alike (random significands), and clock-like times.
            let exponent = UInt64.random(in: 1023 + 29...1023 + 31, using: &rng)
            times.append(Double(bitPattern: exponent << 52 | rng.next() & (1 << 52 - 1)))
            times.append(1_700_000_000 + Double.random(in: 0..<200_000_000, using: &rng))
        }
        for d in times {
            for t in [d, d.nextUp, d.nextDown] where t >= 0x1p29 && t < 0x1p32 {
                // Either path may take it; one must, with description's text.
                #expect(written(t) == t.description, "\(t)")
            }
        }
        for d in [Double(0x1p29).nextDown, 0x1p32, 1_000_000.123_456_7, -1_795_756_842.030_603_1] {
            var out = [UInt8]()
            var wrote = true
            out.appendText(maximum: 32) { wrote = $0.tenthsOfMicroseconds(d) }
            #expect(!wrote, "\(d)")
            #expect(out.isEmpty)
        }
    }

    @Test("integers are written as their description, appended after what the buffer holds")
    func integersAppended() {
        var out = Array("x".utf8)
        JSONValue.writeInt(Int64.min, to: &out)
        JSONValue.writeInt(0, to: &out)
        JSONValue.writeInt(Int64.max, to: &out)
        #expect(String(decoding: out, as: UTF8.self) == "x\(Int64.min)0\(Int64.max)")
    }

    @Test("a string written from its bytes equals one written from the String, escapes included")
    func stringBytes() {
        for s in ["", "plain", "\"", "a\"b\\c\nd\u{1}e", "é日本\u{7f}", "\u{0}\u{0}", "end\\"] {
            var fromString = [UInt8]()
            JSONValue.writeString(s, to: &fromString)
            var fromBytes = [UInt8]()
            Array(s.utf8).withUnsafeBufferPointer { JSONValue.writeString(bytes: $0, to: &fromBytes) }
            #expect(fromBytes == fromString, "\(s)")
        }
    }

    @Test("every byte is escaped or not, alike at every place of an eight-byte word and of the tail")
    func everyByteAtEveryPlace() {
        // What a string literal holds of one byte, by its class: control bytes, the quote and
        // the backslash escaped, every other byte (DEL, UTF-8's high bytes) as it is.
        let hex = Array("0123456789abcdef".utf8)
        func expected(_ b: UInt8) -> [UInt8] {
            switch b {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"): return [UInt8(ascii: "\\"), b]
            case 0x0A: return Array(#"\n"#.utf8)
            case 0x0D: return Array(#"\r"#.utf8)
            case 0x09: return Array(#"\t"#.utf8)
            case 0..<0x20: return Array(#"\u00"#.utf8) + [hex[Int(b >> 4)], hex[Int(b & 15)]]
            default: return [b]
            }
        }
        // Fillers on both sides of a class's boundaries (0x1f/0x20, 0x21/0x22/0x23, 0x5b/0x5c/
        // 0x5d, 0x7f/0x80, 0xa0, 0xff), which a word-at-a-time scan's borrows and carries cross,
        // and the escaped bytes themselves, so every lane of a word can match at once.
        // Mismatches are collected and checked once: a few hundred thousand cases.
        var failures = [String]()
        for filler: UInt8 in [
            UInt8(ascii: "a"), 0x20, 0x23, 0x21, 0x5B, 0x5D, 0x7F, 0x80, 0xA0, 0xFF, 0x01, 0x1F, 0x22, 0x5C,
        ] {
            for length in [1, 7, 8, 9, 15, 16, 17, 24] {
                for place in 0..<length {
                    for b in UInt8.min...UInt8.max {
                        var text = [UInt8](repeating: filler, count: length)
                        text[place] = b
                        var want = [UInt8(ascii: "\"")]
                        for c in text { want += expected(c) }
                        want.append(UInt8(ascii: "\""))
                        var out = [UInt8]()
                        text.withUnsafeBufferPointer { JSONValue.writeString(bytes: $0, to: &out) }
                        if out != want { failures.append("byte \(b) at \(place) of \(length) among \(filler)") }
                        var cursor = [UInt8]()
                        text.withUnsafeBufferPointer { t in
                            cursor.appendText(maximum: JSONCursor.stringMaximum(t.count)) { $0.string(t) }
                        }
                        if cursor != want {
                            failures.append("cursor: byte \(b) at \(place) of \(length) among \(filler)")
                        }
                    }
                }
            }
        }
        #expect(failures.isEmpty, "\(failures.count) mismatches, first: \(failures.prefix(5))")
    }

    @Test("a string of runs between escapes, the escapes at word boundaries and side by side")
    func runsBetweenEscapes() {
        var text = [UInt8]()
        for i in 0..<40 { text += [UInt8](repeating: UInt8(ascii: "x"), count: i % 9) + [i % 2 == 0 ? 0x22 : 0x1F] }
        text += [0x5C, 0x5C, 0x00]
        var want = [UInt8(ascii: "\"")]
        for c in text {
            switch c {
            case 0x22: want += [0x5C, 0x22]
            case 0x5C: want += [0x5C, 0x5C]
            case 0x1F: want += Array(#"\u001f"#.utf8)
            case 0x00: want += Array(#"\u0000"#.utf8)
            default: want.append(c)
            }
        }
        want.append(UInt8(ascii: "\""))
        var out = [UInt8]()
        text.withUnsafeBufferPointer { JSONValue.writeString(bytes: $0, to: &out) }
        #expect(out == want)
        var cursor = Array("x".utf8)
        text.withUnsafeBufferPointer { t in
            cursor.appendText(maximum: JSONCursor.stringMaximum(t.count)) { $0.string(t) }
        }
        #expect(cursor == Array("x".utf8) + want)
    }

    @Test("a cursor writes what the array writers write, in one append after the buffer's bytes")
    func cursorMatchesWriters() {
        let strings = ["", "plain", "\"", "a\"b\\c\nd\u{1}e\r\t", "é日本\u{7f}", "\u{0}\u{1f}", "end\\"]
        let doubles: [Double] = [0, -0.0, 1, 1_764_193_925, 1_764_193_925.5, 1_764_193_925.123_456, 0.1, 1e300, .nan]
        var ints: [Int64] = [0, 1, 9, 10, 99, 100, -1, 1_234_567_890_123, Int64.min, Int64.max]
        var power: Int64 = 1
        for _ in 0..<18 {  // each count of digits at its edges
            power *= 10
            ints += [power - 1, power, -power, 1 - power]
        }
        var expected = Array("x".utf8)
        var written = Array("x".utf8)
        for s in strings {
            JSONValue.writeString(s, to: &expected)
            let bytes = Array(s.utf8)
            bytes.withUnsafeBufferPointer { b in
                written.appendText(maximum: JSONCursor.stringMaximum(b.count)) { $0.string(b) }
            }
        }
        for d in doubles {
            JSONValue.writeDouble(d, to: &expected)
            written.appendText(maximum: JSONCursor.doubleMaximum) { $0.double(d) }
        }
        for i in ints {
            expected += Array("\(i)".utf8)
            written.appendText(maximum: 20) { $0.int(i) }
        }
        #expect(written == expected)
    }

    #if DEBUG
    // The room can be on the stack: a write past it must stop before it is made, not be
    // found after. Each exit test gives a cursor less room than a buffer it cannot harm
    // holds, and writes one byte more than its room through another kind of write; with no
    // check at the write, the process would end normally.
    @Test("a cursor stops before a literal passes its room")
    func literalPastRoom() async {
        await #expect(processExitsWith: .failure) {
            var c = JSONCursor(.allocate(capacity: 64), room: 4)
            c.literal("12345")
        }
    }

    @Test("a cursor stops before a string's escapes pass its room")
    func escapesPastRoom() async {
        await #expect(processExitsWith: .failure) {
            var c = JSONCursor(.allocate(capacity: 64), room: 15)
            let text: [UInt8] = [1, 1, 65, 65]  // 2 + 6 + 6 + 1 + 1 bytes written
            text.withUnsafeBufferPointer { c.string($0) }
        }
    }

    @Test("a cursor stops before a string's plain byte after escapes passes its room")
    func plainBytePastRoom() async {
        await #expect(processExitsWith: .failure) {
            var c = JSONCursor(.allocate(capacity: 64), room: 14)
            let text: [UInt8] = [1, 1, 65, 65]  // stops at the second A
            text.withUnsafeBufferPointer { c.string($0) }
        }
    }

    @Test("a cursor stops before an escape passes its room")
    func escapePastRoom() async {
        await #expect(processExitsWith: .failure) {
            var c = JSONCursor(.allocate(capacity: 64), room: 12)
            let text: [UInt8] = [1, 1, 65, 65]  // stops inside the second escape
            text.withUnsafeBufferPointer { c.string($0) }
        }
    }

    @Test("a cursor stops before bytes pass its room")
    func bytesPastRoom() async {
        await #expect(processExitsWith: .failure) {
            var c = JSONCursor(.allocate(capacity: 64), room: 3)
            let text: [UInt8] = [1, 2, 3, 4]
            text.withUnsafeBufferPointer { c.bytes($0) }
        }
    }

    @Test("a cursor stops before a time's fraction passes its room")
    func fractionPastRoom() async {
        await #expect(processExitsWith: .failure) {
            var c = JSONCursor(.allocate(capacity: 64), room: 11)
            c.double(1_764_193_925.123456)  // ten digits and the point fit, the six after do not
        }
    }

    @Test("a cursor stops before an integer's digits pass its room")
    func digitsPastRoom() async {
        await #expect(processExitsWith: .failure) {
            var c = JSONCursor(.allocate(capacity: 64), room: 19)
            c.int(Int64.min)
        }
    }

    @Test("a cursor writes up to the end of its room")
    func writesToTheEnd() {
        let buffer = UnsafeMutablePointer<UInt8>.allocate(capacity: 20)
        defer { buffer.deallocate() }
        var c = JSONCursor(buffer, room: 20)
        c.int(Int64.min)
        #expect(Array(UnsafeBufferPointer(start: buffer, count: 20)) == Array("-9223372036854775808".utf8))
    }
    #endif
}
