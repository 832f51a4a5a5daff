// What a connection's waiting requests hold is what control.connection_input_bytes counts
// them for (their line and a little): lines read while a request runs wait as text and are
// parsed when their turn comes. Parsed on arrival, `[0,0,…]` held about twelve times its
// length. Debug builds show the requests waiting parsed (`stats.debug`, ASSETD_DEBUG_STATS)
// and hold a long line's parse while the file ASSETD_DEBUG_HOLD_LONG_PARSE names exists.

import AssetClient
import Foundation
import Testing

#if DEBUG
@Suite struct HeldInputTests {
    @Test("lines read while a request runs wait as text, counted against the input bound, then run in order")
    func waitingLinesStayText() throws {
        let h = try DaemonHarness(start: false)
        let hold = h.dir + "/hold-long-parse"
        h.environment = ["ASSETD_DEBUG_HOLD_LONG_PARSE": hold, "ASSETD_DEBUG_STATS": "1"]
        try h.start()
        let c = try h.client(timeout: 60)
        #expect(FileManager.default.createFile(atPath: hold, contents: nil))
        let raw = try RawConnection(path: h.socket)
        raw.setReceiveTimeout(60)
        // A long line runs (held in its parse on the pool); 100 lines of small numbers follow.
        raw.send(LongLineTests.widePing(id: 0, members: 6_000))
        #expect(eventually { h.exists(hold + ".held") }, "the long line reached the hold")
        let zeros = Array(repeating: "0", count: 2_000).joined(separator: ",")
        let line = { (id: Int) in #"{"jsonrpc":"2.0","id":\#(id),"method":"ping","params":{"n":[\#(zeros)]}}"# + "\n" }
        for id in 1...100 { raw.send(line(id)) }
        // Lines that fail to parse, parsed at their turn too: an id with no method, not JSON,
        // and a notification (no reply), answered in their places.
        raw.send(#"{"jsonrpc":"2.0","id":101}"# + "\n")
        raw.send("{\n")
        raw.send(#"{"jsonrpc":"2.0","method":"object.get","params":{}}"# + "\n")
        raw.send(#"{"jsonrpc":"2.0","id":102,"method":"ping"}"# + "\n")
        // Each line is counted with a little for its bookkeeping.
        let counted = 100 * (line(100).utf8.count - 1 + 128)
        let inputBytes = { Int((try? c.call("stats")["buffers"]?["input_bytes"]?.intValue) ?? 0) }
        #expect(eventually { inputBytes() >= counted }, "all 100 read and counted")
        let debug = try c.call("stats")["debug"]
        #expect(debug?["parsed_requests_waiting"] == 0, "\(debug?.serialized() ?? "no debug stats")")

        try FileManager.default.removeItem(atPath: hold)
        for id in 0...100 { #expect(raw.readLine()?["id"] == .int(Int64(id))) }
        let noMethod = raw.readLine()
        #expect(noMethod?["id"] == 101 && noMethod?["error"] != nil, "\(String(describing: noMethod))")
        let notJSON = raw.readLine()
        #expect(notJSON?["id"] == .null && notJSON?["error"] != nil, "\(String(describing: notJSON))")
        #expect(raw.readLine()?["id"] == 102, "the notification got no reply")
        #expect(try c.call("stats")["buffers"]?["input_bytes"] == 0)
    }
}
#endif
