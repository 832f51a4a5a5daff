// Line framing (assetd(8), CONTROL PROTOCOL, Framing): lines split on "\n" across arbitrary
// chunks, blank lines skipped, the limit applies to the line without its newline, and an
// over-long line stops the framer.

import Testing
import ControlProtocol

@Suite struct LineFramerTests {
    func feed(_ f: inout LineFramer, _ s: String) -> [LineFramer.Item] {
        Array(s.utf8).withUnsafeBytes { f.feed($0) }
    }

    @Test("lines split across chunks come out whole and in order; blank lines are skipped")
    func splitsAcrossChunks() {
        var f = LineFramer(maximumLength: 100)
        #expect(feed(&f, "ab").isEmpty)
        #expect(feed(&f, "c\n\n\r\nde") == [.line(Array("abc".utf8))])
        #expect(feed(&f, "f\r\ng\n") == [.line(Array("def".utf8)), .line(Array("g".utf8))])
        #expect(f.pendingCount == 0)
    }

    @Test("the room a long line took is given back once it is complete, down to what is held")
    func longLineCapacityIsReleased() {
        var f = LineFramer(maximumLength: 4 << 20)
        let chunk = String(repeating: "x", count: 64 << 10)
        for _ in 0..<16 { #expect(feed(&f, chunk).isEmpty) }
        #expect(f.heldCapacity >= 1 << 20)
        // The line ends, and the next one's first 60 KB stay held.
        #expect(feed(&f, "\n" + String(repeating: "y", count: 60_000)).count == 1)
        #expect(f.pendingCount == 60_000)
        #expect(f.heldCapacity < 128 << 10, "\(f.heldCapacity)")
        #expect(feed(&f, "\n").count == 1)
        #expect(f.heldCapacity <= 64 << 10, "\(f.heldCapacity)")
    }

    @Test("a line of exactly the limit passes; one byte more is too long, even before its newline")
    func limit() {
        var f = LineFramer(maximumLength: 5)
        #expect(feed(&f, "12345\n") == [.line(Array("12345".utf8))])
        #expect(feed(&f, "123456") == [.tooLong])
        #expect(f.overflowed)
        #expect(feed(&f, "\nok\n").isEmpty)
    }

    @Test("any chunking gives the lines of the whole text at once, read in place or held over")
    func chunkingDoesNotMatter() {
        let text = Array("a\n\n bc \r\nlong line here\n\t\nx\r\n\nlast\nrest".utf8)
        var whole = LineFramer(maximumLength: 100)
        let expected = text.withUnsafeBytes { whole.feed($0) }
        #expect(expected.count == 5)
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<500 {
            var f = LineFramer(maximumLength: 100)
            var got = [LineFramer.Item]()
            var at = 0
            while at < text.count {
                let n = Int.random(in: 1...8, using: &generator)
                let chunk = Array(text[at..<min(text.count, at + n)])
                got += chunk.withUnsafeBytes { f.feed($0) }
                at += n
            }
            #expect(got == expected)
            #expect(f.pendingCount == 4, "\"rest\" waits for its newline")
        }
    }

    @Test("a line over the limit inside one chunk is reported after the lines before it")
    func limitInChunk() {
        var f = LineFramer(maximumLength: 3)
        #expect(feed(&f, "ab\nabcdef\nxy\n") == [.line(Array("ab".utf8)), .tooLong])
    }
}
