// assetd's log escapes control characters in what it writes: a client's file name with a line
// end in it would otherwise start a log line of the client's choosing.

import Foundation
import Testing

@Suite struct LogEscapeTests {
    @Test("a file name with a line end is logged on one line, escaped, and forges no line")
    func nameWithLineEnd() throws {
        let h = try DaemonHarness()
        let c = try h.client()
        let forged = "2026-11-28T16:00:00+0000 critical assetd: [AssetDaemon] FORGED"
        let path = try h.makeFile("x\n" + forged)
        try c.putFile("media", "k", path)
        // Another file at the name: its unlink is skipped and logged with the path.
        #expect(unlink(path) == 0)
        #expect(FileManager.default.createFile(atPath: path, contents: Data("other".utf8)))
        try c.deleteObject("media", "k")
        #expect(eventually { h.log.contains("unlink skipped") }, "\(h.log.suffix(2000))")
        #expect(h.log.contains("x\\n" + forged), "\(h.log.suffix(2000))")
        #expect(!h.log.split(separator: "\n").contains { $0.hasPrefix(forged) }, "\(h.log.suffix(2000))")
        #expect(h.exists(path))
    }
}
