// Lines up to 64 KiB are parsed on the loop, but parsed, `[0,0,…]` holds about twelve times
// its text: one over a kilobyte waits at the parse gate like a long one while the requests
// running hold the total, and lines read behind the one to run are parsed as they are read
// only up to a few KiB (control.total_buffer_bytes in assetd.toml(5)). Debug builds show the
// parses waiting and the requests waiting parsed (`stats.debug`, ASSETD_DEBUG_STATS).

import AssetClient
import Foundation
import Testing

#if DEBUG
@Suite struct ShortLineGateTests {
    /// A ping of `count` zeros in an array: about twice `count` bytes of text.
    static func zerosPing(id: Int, count: Int) -> String {
        let zeros = Array(repeating: "0", count: count).joined(separator: ",")
        return #"{"jsonrpc":"2.0","id":\#(id),"method":"ping","params":{"n":[\#(zeros)]}}"# + "\n"
    }

    @Test("a short line over a kilobyte waits to be parsed while the requests running hold the total")
    func shortLineWaitsForTheTotal() throws {
        let h = try DaemonHarness(controlSection: "total_buffer_bytes = \"100KiB\"", start: false)
        let hold = h.dir + "/hold-long-parse"
        h.environment = ["ASSETD_DEBUG_HOLD_LONG_PARSE": hold, "ASSETD_DEBUG_STATS": "1"]
        try h.start()
        let c = try h.client(timeout: 60)
        #expect(FileManager.default.createFile(atPath: hold, contents: nil))
        let first = try RawConnection(path: h.socket)
        let second = try RawConnection(path: h.socket)
        for r in [first, second] { r.setReceiveTimeout(60) }
        // A line of about 78 KB held in its parse fills most of the total; one of 40 KB, parsed
        // on the loop, would hold about 480 KB.
        first.send(LongLineTests.widePing(id: 1, members: 6_000))
        #expect(eventually { h.exists(hold + ".held") }, "the long line reached the hold")
        let short = Self.zerosPing(id: 2, count: 20_000)
        #expect(short.utf8.count < 64 << 10)
        second.send(short)
        let debug = { (try? c.call("stats")["debug"]) ?? .null }
        #expect(eventually { debug()["parses_waiting"] == 1 }, "\(debug())")

        try FileManager.default.removeItem(atPath: hold)
        #expect(first.readLine()?["id"] == 1)
        #expect(second.readLine()?["id"] == 2, "parsed once the first was answered")
        #expect(debug()["parses_waiting"] == 0)
        #expect(try c.call("stats")["buffers"]?["input_bytes"] == 0)
    }

    @Test("lines read behind a request to run are parsed as they are read for a few KiB only")
    func fewLinesParsedAhead() throws {
        let h = try DaemonHarness(start: false)
        let hold = h.dir + "/hold-pool-job"
        h.environment = ["ASSETD_DEBUG_HOLD_POOL_JOB": hold, "ASSETD_DEBUG_STATS": "1"]
        try h.start()
        let c = try h.client(timeout: 60)
        #expect(FileManager.default.createFile(atPath: hold, contents: nil))
        let raw = try RawConnection(path: h.socket)
        raw.setReceiveTimeout(60)
        // One write: a request held on the pool, then 40 lines of just under a kilobyte.
        let list = #"{"jsonrpc":"2.0","id":0,"method":"object.list","params":{"collection":"c"}}"# + "\n"
        let line = { (id: Int) in Self.zerosPing(id: id, count: 450) }
        #expect(line(40).utf8.count <= 1024)
        raw.send(list + (1...40).map(line).joined())
        #expect(eventually { h.exists(hold + ".held") }, "the request reached the hold")
        let counted = 40 * (line(40).utf8.count - 1 + 128)
        let inputBytes = { Int((try? c.call("stats")["buffers"]?["input_bytes"]?.intValue) ?? 0) }
        #expect(eventually { inputBytes() >= counted }, "all 40 read and counted")
        let parsed = try c.call("stats")["debug"]?["parsed_requests_waiting"]?.intValue ?? -1
        #expect(parsed >= 0 && parsed <= 4, "\(parsed) parsed as they were read")

        try FileManager.default.removeItem(atPath: hold)
        for id in 0...40 { #expect(raw.readLine()?["id"] == .int(Int64(id))) }
        #expect(try c.call("stats")["buffers"]?["input_bytes"] == 0)
    }
}
#endif
