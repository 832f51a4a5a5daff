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

    @Test("a line of exactly the limit passes; one byte more is too long, even before its newline")
    func limit() {
        var f = LineFramer(maximumLength: 5)
        #expect(feed(&f, "12345\n") == [.line(Array("12345".utf8))])
        #expect(feed(&f, "123456") == [.tooLong])
        #expect(f.overflowed)
        #expect(feed(&f, "\nok\n").isEmpty)
    }

    @Test("a line over the limit inside one chunk is reported after the lines before it")
    func limitInChunk() {
        var f = LineFramer(maximumLength: 3)
        #expect(feed(&f, "ab\nabcdef\nxy\n") == [.line(Array("ab".utf8)), .tooLong])
    }
}
