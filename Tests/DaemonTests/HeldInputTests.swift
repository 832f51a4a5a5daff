// What a connection's waiting requests hold is what control.connection_input_bytes counts
// them for (their line and a little): lines read while a request runs wait as text and are
// parsed when their turn comes. Parsed on arrival, `[0,0,…]` held about twelve times its
// length. Debug builds show the requests waiting parsed (`stats.debug`, ASSETD_DEBUG_STATS)
// and hold a long line's parse while the file ASSETD_DEBUG_HOLD_LONG_PARSE names exists. The
// request taken to run is counted too, by what it holds parsed, until it is answered.

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

    @Test("a request taken to run stays counted until answered: the connection is paused past its input bound")
    func runningRequestIsCounted() throws {
        let h = try DaemonHarness(controlSection: "connection_input_bytes = \"512KiB\"", start: false)
        let hold = h.dir + "/hold-long-parse"
        h.environment = ["ASSETD_DEBUG_HOLD_LONG_PARSE": hold]
        try h.start()
        let c = try h.client(timeout: 60)
        #expect(FileManager.default.createFile(atPath: hold, contents: nil))
        let raw = try RawConnection(path: h.socket)
        raw.setReceiveTimeout(60)
        let long = LongLineTests.widePing(id: 0, members: 6_000)
        raw.send(long)
        #expect(eventually { h.exists(hold + ".held") }, "the long line reached the hold")
        let buffers = { (try? c.call("stats")["buffers"]) ?? .null }
        let held = Int64(long.utf8.count)
        #expect(eventually { (buffers()["input_bytes"]?.intValue ?? 0) >= held }, "\(buffers())")
        // 220 lines of about 2 KiB: under the bound alone, over it with the held request.
        let zeros = Array(repeating: "0", count: 1_000).joined(separator: ",")
        let line = { (id: Int) in #"{"jsonrpc":"2.0","id":\#(id),"method":"ping","params":{"n":[\#(zeros)]}}"# + "\n" }
        let waiting = Int64(220 * (line(220).utf8.count - 1 + 128))
        #expect(waiting < 512 << 10 && waiting + held > 512 << 10)
        for id in 1...220 { raw.send(line(id)) }
        #expect(eventually { buffers()["paused_connections"] == 1 }, "\(buffers())")
        #expect((buffers()["input_bytes"]?.intValue ?? 0) > 512 << 10, "\(buffers())")

        try FileManager.default.removeItem(atPath: hold)
        for id in 0...220 { #expect(raw.readLine()?["id"] == .int(Int64(id))) }
        #expect(eventually { buffers()["input_bytes"] == 0 && buffers()["paused_connections"] == 0 }, "\(buffers())")
    }

    @Test("a request held after parsing counts for what it holds parsed, not its line")
    func parsedRequestCountsItsWeight() throws {
        let h = try DaemonHarness(start: false)
        let hold = h.dir + "/hold-pool-job"
        h.environment = ["ASSETD_DEBUG_HOLD_POOL_JOB": hold]
        try h.start()
        let c = try h.client(timeout: 60)
        #expect(FileManager.default.createFile(atPath: hold, contents: nil))
        let raw = try RawConnection(path: h.socket)
        raw.setReceiveTimeout(60)
        // About 20 KB of `[0,0,…]`, parsed on arrival, held on the pool before it runs.
        let zeros = Array(repeating: "0", count: 10_000).joined(separator: ",")
        let line = #"{"jsonrpc":"2.0","id":1,"method":"object.list","params":{"collection":"c","n":[\#(zeros)]}}"#
        raw.send(line + "\n")
        #expect(eventually { h.exists(hold + ".held") }, "the request reached the hold")
        let inputBytes = (try? c.call("stats")["buffers"]?["input_bytes"]?.intValue) ?? 0
        #expect(inputBytes >= Int64(10 * line.utf8.count), "\(inputBytes)")

        try FileManager.default.removeItem(atPath: hold)
        #expect(raw.readLine()?["id"] == 1)
        #expect(try c.call("stats")["buffers"]?["input_bytes"] == 0)
    }

    @Test("a long line is let in for at most half the total: it does not wait for nothing to run")
    func reserveIsCappedAtHalfTheTotal() throws {
        let h = try DaemonHarness(
            controlSection: "connection_input_bytes = \"1MiB\"\ntotal_buffer_bytes = \"1MiB\"", start: false)
        let hold = h.dir + "/hold-pool-job"
        h.environment = ["ASSETD_DEBUG_HOLD_POOL_JOB": hold]
        try h.start()
        #expect(FileManager.default.createFile(atPath: hold, contents: nil))
        // A request holding about 240 KB runs (held on the pool) ...
        let held = try RawConnection(path: h.socket)
        let long = try RawConnection(path: h.socket)
        for r in [held, long] { r.setReceiveTimeout(30) }
        let zeros = Array(repeating: "0", count: 10_000).joined(separator: ",")
        held.send(
            #"{"jsonrpc":"2.0","id":1,"method":"object.list","params":{"collection":"c","n":[\#(zeros)]}}"# + "\n")
        #expect(eventually { h.exists(hold + ".held") }, "the request reached the hold")
        // ... and a line of 78 KB, let in for 24 times that but at most 512 KiB, fits beside it.
        long.send(LongLineTests.widePing(id: 2, members: 6_000))
        #expect(long.readLine()?["id"] == 2, "parsed while the other was held")

        try FileManager.default.removeItem(atPath: hold)
        #expect(held.readLine()?["id"] == 1)
    }

    @Test("a long line waits to be parsed while the requests running hold more than the total")
    func longLineWaitsForTheTotal() throws {
        let h = try DaemonHarness(controlSection: "total_buffer_bytes = \"100KiB\"", start: false)
        let hold = h.dir + "/hold-long-parse"
        h.environment = ["ASSETD_DEBUG_HOLD_LONG_PARSE": hold, "ASSETD_DEBUG_STATS": "1"]
        try h.start()
        let c = try h.client(timeout: 60)
        #expect(FileManager.default.createFile(atPath: hold, contents: nil))
        let first = try RawConnection(path: h.socket)
        let second = try RawConnection(path: h.socket)
        for r in [first, second] { r.setReceiveTimeout(60) }
        // Each line is about 78 KB: one held in its parse, the other would pass the total.
        first.send(LongLineTests.widePing(id: 1, members: 6_000))
        #expect(eventually { h.exists(hold + ".held") }, "the long line reached the hold")
        second.send(LongLineTests.widePing(id: 2, members: 6_000))
        let debug = { (try? c.call("stats")["debug"]) ?? .null }
        #expect(eventually { debug()["parses_waiting"] == 1 }, "\(debug())")

        try FileManager.default.removeItem(atPath: hold)
        #expect(first.readLine()?["id"] == 1)
        #expect(second.readLine()?["id"] == 2, "parsed once the first was answered")
        #expect(debug()["parses_waiting"] == 0)
        #expect(try c.call("stats")["buffers"]?["input_bytes"] == 0)
    }

    @Test(
        "a user with nothing running gets its long line parsed while another's fill the total",
        .enabled(if: Nobody.canSwitch, "needs root and setpriv to act as nobody"))
    func otherUserIsNotHeldUp() throws {
        let h = try DaemonHarness(controlSection: "mode = \"0666\"\ntotal_buffer_bytes = \"100KiB\"", start: false)
        let hold = h.dir + "/hold-long-parse"
        h.environment = ["ASSETD_DEBUG_HOLD_LONG_PARSE": hold, "ASSETD_DEBUG_STATS": "1"]
        try h.start()
        let c = try h.client(timeout: 60)
        #expect(FileManager.default.createFile(atPath: hold, contents: nil))
        // This user's long line, held in its parse, fills the total; its next one waits.
        let first = try RawConnection(path: h.socket)
        let second = try RawConnection(path: h.socket)
        for r in [first, second] { r.setReceiveTimeout(60) }
        first.send(LongLineTests.widePing(id: 1, members: 6_000))
        #expect(eventually { h.exists(hold + ".held") }, "the long line reached the hold")
        second.send(LongLineTests.widePing(id: 2, members: 6_000))
        let debug = { (try? c.call("stats")["debug"]) ?? .null }
        #expect(eventually { debug()["parses_waiting"] == 1 }, "\(debug())")
        // Another user's put of 100 KB is parsed (not held: not a ping) and answered meanwhile.
        let put = try runProcess(
            "/usr/bin/setpriv",
            [
                "--reuid=\(Nobody.uid)", "--regid=\(Nobody.uid)", "--clear-groups", Binaries.assetctl, "--socket",
                h.socket,
            ]
                + ["put", "c", "k", "-"], stdin: "\"" + String(repeating: "x", count: 100_000) + "\"", timeout: 30)
        #expect(put.status == 0, "\(put.stderr)")
        #expect(h.exists(hold), "answered while the other user's parse was held")

        try FileManager.default.removeItem(atPath: hold)
        #expect(first.readLine()?["id"] == 1)
        #expect(second.readLine()?["id"] == 2)
        #expect(try c.getObject("c", "k")["value"] == .string(String(repeating: "x", count: 100_000)))
    }
}
#endif

/// A request is refused when what it would hold parsed passes the connection's input bound,
/// however short its line: `[0,0,…]` holds about twelve times its text.
@Suite struct HeavyRequestTests {
    @Test("a request holding more than connection_input_bytes parsed is refused; the connection stays open")
    func heavyRequestIsRefused() throws {
        let h = try DaemonHarness(controlSection: "connection_input_bytes = \"1MiB\"")
        let raw = try RawConnection(path: h.socket)
        raw.setReceiveTimeout(60)
        // About 200 KB of text each: 100,000 numbers hold over 2 MiB, a string its length.
        let zeros = Array(repeating: "0", count: 100_000).joined(separator: ",")
        raw.send(#"{"jsonrpc":"2.0","id":1,"method":"ping","params":{"n":[\#(zeros)]}}"# + "\n")
        let refused = raw.readLine()
        #expect(refused?["id"] == 1, "\(String(describing: refused))")
        #expect(refused?["error"]?["data"]?["code"] == "request_too_large", "\(String(describing: refused))")
        #expect(refused?["error"]?["data"]?["detail"]?["limit"] == "control.connection_input_bytes")
        let text = String(repeating: "x", count: 200_000)
        let put = { (id: Int, key: String, value: String) in
            #"{"jsonrpc":"2.0","id":\#(id),"method":"object.put","params":{"collection":"c","key":"\#(key)","value":\#(value)}}"#
                + "\n"
        }
        raw.send(put(2, "k", "\"\(text)\""))
        #expect(raw.readLine()?["result"]?["commit"] != nil)
        raw.send(put(3, "n", "[\(zeros)]"))
        let numbers = raw.readLine()
        #expect(numbers?["id"] == 3, "\(String(describing: numbers))")
        #expect(numbers?["error"]?["data"]?["code"] == "request_too_large", "\(String(describing: numbers))")
        let c = try h.client()
        #expect(try c.getObject("c", "n") == .null, "the refused put did not run")
        #expect(try c.call("stats")["buffers"]?["input_bytes"] == 0)
    }
}
